package chart

// The operator generates signing and age keys into Secrets only when the
// chart's values grant it create/update on Secrets.

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
	objs := installForTeam(t, release, opNS, team, "")
	provider := func(name, secret string) *v1alpha3.GitProvider {
		p := gitProvider(team, name, team)
		p.Spec.Commit.Signing = &v1alpha3.CommitSigning{SecretRef: v1alpha3.SecretKeyReference{Name: secret}, GenerateWhenMissing: true}
		return p
	}
	create(t,
		gitCredentials(team),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "existing"},
			StringData: map[string]string{"note": "the key is added beside this"}},
		provider("creates", "generated"),
		provider("updates", "existing"),
	)

	stop := startOperator(t, objs, opNS, sa)
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

	// The Secret writes are in the credential namespaces' Roles.
	install(t, byKind(render(t, release, opNS, teamValues(team, "generateSigningKeys: true")), "Role"))
	stop = startOperator(t, objs, opNS, sa)
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

// gitCredentials is the Secret "git-credentials" in ns that gitProvider's
// providers log in to the Git server with.
func gitCredentials(ns string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "git-credentials"},
		StringData: map[string]string{"username": gitUser, "password": gitPassword}}
}

// gitProvider is a GitProvider ns/name for the Git server's repository repo
// (branch main), logging in with gitCredentials(ns).
func gitProvider(ns, name, repo string) *v1alpha3.GitProvider {
	return &v1alpha3.GitProvider{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha3.GitProviderSpec{
			URL:             env.git.HTTPURL(repo),
			Forge:           &v1alpha3.ForgeSpec{Type: v1alpha3.ForgeGit},
			SecretRef:       &v1alpha3.LocalObjectReference{Name: "git-credentials"},
			AllowedBranches: []string{"main"},
		}}
}

// TestEncryptionKeyGenerationNeedsTheChartsOptIn runs the operator as the
// chart's ServiceAccount with two GitTargets that generate their age key
// (spec.encryption.age.generateWhenMissing): one into a Secret that does not
// exist (create), one into an existing Secret without an *.agekey entry
// (update). With the default values the operator may not write Secrets and
// both say so (EncryptionConfigured=False/EncryptionKeyMissing, naming the
// value to set); once an upgrade sets rbac.generateEncryptionKeys=true, the
// running operator generates both keys at the next resync.
func TestEncryptionKeyGenerationNeedsTheChartsOptIn(t *testing.T) {
	const release, opNS, team, sa = "enc", "encryption-operator", "team-encryption", "enc-gitops-reverser"
	objs := installForTeam(t, release, opNS, team, "")
	target := func(name, secret string) *v1alpha3.GitTarget {
		return &v1alpha3.GitTarget{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: name},
			Spec: v1alpha3.GitTargetSpec{ProviderRef: v1alpha3.GitProviderReference{Name: "repo"}, Branch: "main", Path: "clusters/" + name,
				Encryption: &v1alpha3.EncryptionSpec{Age: v1alpha3.AgeEncryption{
					SecretRef: &v1alpha3.LocalObjectReference{Name: secret}, GenerateWhenMissing: true}}}}
	}
	create(t,
		localClusterProvider(),
		gitCredentials(team),
		gitProvider(team, "repo", team),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "age-existing"},
			StringData: map[string]string{"note": "the key is added beside this"}},
		target("creates", "age-generated"),
		target("updates", "age-existing"),
	)
	encryptionConfigured := func(name string) *metav1.Condition {
		return meta.FindStatusCondition(targetConditions(t, team, name), v1alpha3.ConditionEncryptionConfigured)
	}

	stop := startOperator(t, objs, opNS, sa)
	for _, name := range []string{"creates", "updates"} {
		require.Eventually(t, func() bool {
			c := encryptionConfigured(name)
			return c != nil && c.Reason == v1alpha3.ReasonEncryptionKeyMissing
		}, 60*time.Second, 200*time.Millisecond, "GitTarget %s reports that it may not write the key; conditions: %+v",
			name, targetConditions(t, team, name))
		c := encryptionConfigured(name)
		require.Equal(t, metav1.ConditionFalse, c.Status)
		require.Contains(t, c.Message, "was refused")
		require.Contains(t, c.Message, "rbac.generateEncryptionKeys=true")
	}

	// helm upgrade with the opt-in: only the Roles change. Key
	// Secrets are read at every resync, so the running operator picks the
	// grant up without a restart.
	install(t, byKind(render(t, release, opNS, teamValues(team, "generateEncryptionKeys: true")), "Role"))
	for name, secret := range map[string]string{"creates": "age-generated", "updates": "age-existing"} {
		require.Eventually(t, func() bool {
			c := encryptionConfigured(name)
			return c != nil && c.Status == metav1.ConditionTrue
		}, 60*time.Second, 200*time.Millisecond, "GitTarget %s EncryptionConfigured with a generated key; conditions: %+v",
			name, targetConditions(t, team, name))
		var s corev1.Secret
		require.NoError(t, env.kube.Client().Get(ctx(t), client.ObjectKey{Namespace: team, Name: secret}, &s))
		// EncryptionConfigured=True at a later resync means the operator
		// read this identity back from the Secret.
		require.Contains(t, string(s.Data["age.agekey"]), "AGE-SECRET-KEY-1", "an age identity generated into Secret %s", secret)
	}
	require.NoError(t, stop())
}

// localClusterProvider is the ClusterProvider "default": this cluster, every
// namespace admitted.
func localClusterProvider() *v1alpha3.ClusterProvider {
	return &v1alpha3.ClusterProvider{ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: v1alpha3.ClusterProviderSpec{AllowedNamespaces: &v1alpha3.NamespacePolicy{Selector: &metav1.LabelSelector{}}}}
}

// installForTeam installs release into opNS with the chart's default values
// but team in rbac.credentialNamespaces (plus extra values, YAML under
// rbac), creates team's namespace and its repository on the Git server,
// and returns the rendered release.
func installForTeam(t *testing.T, release, opNS, team, extraRBAC string) []*unstructured.Unstructured {
	t.Helper()
	_, err := env.git.CreateBareRepo(team)
	require.NoError(t, err)
	ensureNamespace(t, team)
	objs := render(t, release, opNS, teamValues(team, extraRBAC))
	install(t, objs)
	return objs
}

// teamValues are the chart values granting team's Secrets, with extraRBAC
// (e.g. "generateSigningKeys: true") added under rbac.
func teamValues(team, extraRBAC string) string {
	values := "rbac:\n  credentialNamespaces: [" + team + "]\n"
	if extraRBAC != "" {
		values += "  " + extraRBAC + "\n"
	}
	return values
}
