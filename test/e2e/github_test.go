package e2e

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/forges/github"
	ghsim "github.com/configbutler/gitops-reverser/test/sim/github"
)

// TestThePipelineCommitsThroughTheGitHubAPIAsAnApp runs the mirror against
// the GitHub simulator, authenticated as a GitHub App: the commits are made
// through the Git Data API with the configured author and committer, and the
// provider reports the request budget the worker spent.
func TestThePipelineCommitsThroughTheGitHubAPIAsAnApp(t *testing.T) {
	sim := ghsim.Start()
	t.Cleanup(sim.Close)
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	sim.RegisterApp(1234, 5678, &key.PublicKey)
	require.NoError(t, sim.CreateRepo("acme", "cluster-mirror", map[string]string{"README.md": "mirror\n"}))

	ns := "via-github"
	githubMirror(t, sim, ns, "cluster-mirror", map[string]string{
		"appID": "1234", "installationID": "5678",
		"privateKey": string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})),
	}, nil)
	startOperator(t)
	eventually(t, "the ConfigMap committed through the GitHub API", func() bool {
		content, ok := sim.File("acme", "cluster-mirror", "main", "live/via-github/configmaps/settings.yaml")
		return ok && strings.Contains(content, "region: eu-west-1")
	})
	head, err := sim.HeadCommit("acme", "cluster-mirror", "main")
	require.NoError(t, err)
	require.Equal(t, "GitOps Reverser", head.Author.Name)
	require.Equal(t, "noreply@configbutler.ai", head.Committer.Email)

	var creates int
	for _, r := range sim.Requests() {
		if r.Method == "POST" && strings.HasSuffix(r.Path, "/access_tokens") {
			creates++
		}
	}
	require.Positive(t, creates, "the operator authenticated as the App through an installation token")
	require.Positive(t, metricSum(t, "gitopsreverser_forge_requests_total"), "forge requests are counted")
	// The branch moves before the commit call returns to the worker, which
	// observes its requests then.
	eventually(t, "requests per commit observed", func() bool {
		return metricSum(t, "gitopsreverser_forge_requests_per_commit") > 0
	})
	// The probe itself creates no content: a secondary budget in the
	// provider's status is what the branch worker spent, through the pacer
	// the probe shares with it.
	eventually(t, "the provider reports the secondary budget the worker spent", func() bool {
		var gp v1alpha3.GitProvider
		err := env.kube.Client().Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "github"}, &gp)
		if err != nil || gp.Status.RateLimit == nil {
			return false
		}
		limit := gp.Status.RateLimit
		secondary := limit.Limit == github.DefaultContentPerMinute || limit.Limit == github.DefaultContentPerHour
		return secondary && limit.Remaining < limit.Limit
	})
	eventually(t, "the GitTarget links the commit on GitHub", func() bool {
		var gt v1alpha3.GitTarget
		err := env.kube.Client().Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "mirror"}, &gt)
		return err == nil && gt.Status.LastCommit != nil &&
			gt.Status.LastCommit.URL == "https://github.com/acme/cluster-mirror/commit/"+gt.Status.LastCommit.SHA
	})
}

// githubMirror mirrors the ConfigMaps of namespace ns, one of them
// "settings", under live/ in acme/<repo> on the GitHub simulator, through
// GitProvider "github" with a credentials Secret holding creds; adjust, when
// set, changes the provider's spec before it is created.
func githubMirror(t *testing.T, sim *ghsim.Server, ns, repo string, creds map[string]string, adjust func(*v1alpha3.GitProviderSpec)) {
	t.Helper()
	provider := &v1alpha3.GitProvider{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "github"}, Spec: v1alpha3.GitProviderSpec{
		URL:             "https://github.com/acme/" + repo + ".git",
		Forge:           &v1alpha3.ForgeSpec{Type: v1alpha3.ForgeGitHub, APIURL: sim.URL()},
		SecretRef:       &v1alpha3.LocalObjectReference{Name: "github-credentials"},
		AllowedBranches: []string{"main"},
		Push:            v1alpha3.PushSpec{CommitWindow: &metav1.Duration{Duration: 300 * time.Millisecond}},
	}}
	if adjust != nil {
		adjust(&provider.Spec)
	}
	apply(t,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&v1alpha3.ClusterProvider{ObjectMeta: metav1.ObjectMeta{Name: "default"},
			Spec: v1alpha3.ClusterProviderSpec{AllowedNamespaces: &v1alpha3.NamespacePolicy{Selector: &metav1.LabelSelector{}}}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "github-credentials"}, StringData: creds},
		provider,
		&v1alpha3.GitTarget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mirror"},
			Spec: v1alpha3.GitTargetSpec{ProviderRef: v1alpha3.GitProviderReference{Name: "github"}, Branch: "main", Path: "live"}},
		watchRule(ns, "configmaps", "mirror", "configmaps"),
		configMap(ns, "settings", map[string]string{"region": "eu-west-1"}),
	)
}
