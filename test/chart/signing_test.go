package chart

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/signing"
)

// TestSigningKeyGenerationNeedsTheChartsOptIn runs the operator as the
// chart's ServiceAccount with two GitProviders that generate their signing
// key: one into a Secret that does not exist (create), one into an existing
// Secret without the key (update). With the default values the operator may
// not write Secrets and both say so (SigningKeyMissing, naming the value to
// set); with rbac.generateSigningKeys=true both keys are generated.
func TestSigningKeyGenerationNeedsTheChartsOptIn(t *testing.T) {
	const release, opNS, team, sa = "sig", "signing-operator", "team-signing", "sig-gitops-reverser"
	_, err := env.git.CreateBareRepo(team)
	require.NoError(t, err)
	install(t, render(t, release, opNS, ""))
	ensureNamespace(t, team)
	provider := func(name, secret string) *v1alpha3.GitProvider {
		return &v1alpha3.GitProvider{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: name},
			Spec: v1alpha3.GitProviderSpec{
				URL:             env.git.HTTPURL(team),
				Forge:           &v1alpha3.ForgeSpec{Type: v1alpha3.ForgeGit},
				SecretRef:       &v1alpha3.LocalObjectReference{Name: "git-credentials"},
				AllowedBranches: []string{"main"},
				Commit: v1alpha3.CommitSpec{Signing: &v1alpha3.CommitSigning{
					SecretRef: v1alpha3.SecretKeyReference{Name: secret}, GenerateWhenMissing: true}},
			}}
	}
	create(t,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "git-credentials"},
			StringData: map[string]string{"username": gitUser, "password": gitPassword}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "existing"},
			StringData: map[string]string{"note": "the key is added beside this"}},
		provider("creates", "generated"),
		provider("updates", "existing"),
	)

	stop := startOperator(t, opNS, sa)
	for _, name := range []string{"creates", "updates"} {
		require.Eventually(t, func() bool {
			c := providerReady(t, team, name)
			return c != nil && c.Reason == v1alpha3.ReasonSigningKeyMissing
		}, 60*time.Second, 200*time.Millisecond, "GitProvider %s reports that it may not write the key", name)
		require.Contains(t, providerReady(t, team, name).Message, "rbac.generateSigningKeys=true")
	}
	// A grant is invisible to the operator's watches (a Stalled provider is
	// rechecked every 5 minutes); a restart, as helm upgrade does, is not.
	require.NoError(t, stop())

	install(t, byKind(render(t, release, opNS, "rbac: {generateSigningKeys: true}\n"), "ClusterRole"))
	stop = startOperator(t, opNS, sa)
	for name, secret := range map[string]string{"creates": "generated", "updates": "existing"} {
		require.Eventually(t, func() bool {
			c := providerReady(t, team, name)
			return c != nil && c.Status == metav1.ConditionTrue
		}, 60*time.Second, 200*time.Millisecond, "GitProvider %s Ready with a generated key", name)
		var s corev1.Secret
		require.NoError(t, env.kube.Client().Get(ctx(t), client.ObjectKey{Namespace: team, Name: secret}, &s))
		require.NotEmpty(t, s.Data[signing.DefaultKey], "the key was written into Secret %s", secret)
	}
	require.NoError(t, stop())
}

func providerReady(t *testing.T, ns, name string) *metav1.Condition {
	t.Helper()
	var gp v1alpha3.GitProvider
	if err := env.kube.Client().Get(ctx(t), client.ObjectKey{Namespace: ns, Name: name}, &gp); err != nil {
		return nil
	}
	return meta.FindStatusCondition(gp.Status.Conditions, v1alpha3.ConditionReady)
}
