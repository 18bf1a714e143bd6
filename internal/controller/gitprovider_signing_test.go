package controller_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/forges/sshsign"
	"github.com/configbutler/gitops-reverser/internal/controller"
	"github.com/configbutler/gitops-reverser/internal/signing"
	"github.com/configbutler/gitops-reverser/test/harness"
	simgitlab "github.com/configbutler/gitops-reverser/test/sim/gitlab"
)

// signingProvider is a GitProvider on a fresh git server with
// spec.commit.signing naming secret, with its controller running.
func signingProvider(t *testing.T, secret string, generate bool) (*v1alpha3.GitProvider, string) {
	t.Helper()
	server := startTestGitServer(t, harness.GitServerOptions{})
	namespace := createTestNamespace(t)
	startGitProviderController(t, namespace, &controller.GitProviderReconciler{})
	provider := newProvider(namespace, server.HTTPURL("repo"), "")
	provider.Spec.Commit.Signing = &v1alpha3.CommitSigning{
		SecretRef: v1alpha3.SecretKeyReference{Name: secret}, GenerateWhenMissing: generate}
	return provider, namespace
}

func storedSigningKey(t *testing.T, namespace, name string) *sshsign.Signer {
	t.Helper()
	var secret corev1.Secret
	require.NoError(t, kube.Client().Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, &secret))
	signer, err := sshsign.Parse(secret.Data[signing.DefaultKey])
	require.NoError(t, err)
	return signer
}

func TestGitProviderGeneratesASigningKeyAndPublishesItsPublicHalf(t *testing.T) {
	t.Parallel()
	provider, namespace := signingProvider(t, "commit-signing", true)
	key := createProvider(t, provider)

	got := waitForState(t, key, readyState())
	stored := storedSigningKey(t, namespace, "commit-signing")
	require.Equal(t, stored.PublicKey(), got.Status.SigningPublicKey, "status shows the key the Secret holds")
	signingReady := requireCondition(t, got, v1alpha3.ConditionSigningKeyReady, metav1.ConditionTrue)
	require.Contains(t, signingReady.Message, stored.Fingerprint())
}

// TestGitProviderWithoutASigningKeyCommitsNothingUntilOneIsCreated: a
// missing key holds Ready back (GitTargets commit nothing rather than
// unsigned); creating the Secret is noticed through the Secret watch, and
// replacing the key shows the new public key.
func TestGitProviderWithoutASigningKeyCommitsNothingUntilOneIsCreated(t *testing.T) {
	t.Parallel()
	provider, namespace := signingProvider(t, "commit-signing", false)
	key := createProvider(t, provider)

	got := waitForState(t, key, stalledState(metav1.ConditionTrue, v1alpha3.ReasonSigningKeyMissing,
		"Secret commit-signing (spec.commit.signing.secretRef) not found", "generateWhenMissing"))
	requireCondition(t, got, v1alpha3.ConditionSigningKeyReady, metav1.ConditionFalse)
	require.Empty(t, got.Status.SigningPublicKey)

	first, err := sshsign.Generate("first")
	require.NoError(t, err)
	createSecret(t, namespace, "commit-signing", corev1.SecretTypeOpaque, map[string]string{signing.DefaultKey: string(first)})
	got = waitForState(t, key, readyState())
	require.Equal(t, storedSigningKey(t, namespace, "commit-signing").PublicKey(), got.Status.SigningPublicKey)

	rotated, err := sshsign.Generate("rotated")
	require.NoError(t, err)
	updateSecret(t, client.ObjectKey{Namespace: namespace, Name: "commit-signing"}, map[string]string{signing.DefaultKey: string(rotated)})
	want := storedSigningKey(t, namespace, "commit-signing").PublicKey()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var provider v1alpha3.GitProvider
		require.NoError(c, kube.Client().Get(context.Background(), key, &provider))
		require.Equal(c, want, provider.Status.SigningPublicKey, "the rotated key reaches status")
	}, stateTimeout, 100*time.Millisecond)
	waitForState(t, key, readyState())
}

func TestGitProviderNeverReplacesAnInvalidSigningKey(t *testing.T) {
	t.Parallel()
	provider, namespace := signingProvider(t, "commit-signing", true)
	createSecret(t, namespace, "commit-signing", corev1.SecretTypeOpaque, map[string]string{signing.DefaultKey: "not a key"})
	key := createProvider(t, provider)

	waitForState(t, key, stalledState(metav1.ConditionTrue, v1alpha3.ReasonSigningKeyInvalid,
		`key "signing.key"`, "replace it with an SSH private key"))
	var secret corev1.Secret
	require.NoError(t, kube.Client().Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: "commit-signing"}, &secret))
	require.Equal(t, "not a key", string(secret.Data[signing.DefaultKey]), "the operator does not overwrite a key")
}

// TestGitProviderRefusesSigningOnAForgeThatCannotCarryASignature: GitLab's
// commits API takes no signature, so a signing provider on GitLab is held
// back (Stalled, SigningUnsupported) although its key and repository are
// fine: its GitTargets commit nothing rather than commit unsigned.
func TestGitProviderRefusesSigningOnAForgeThatCannotCarryASignature(t *testing.T) {
	t.Parallel()
	server := simgitlab.Start()
	t.Cleanup(server.Close)
	server.AddToken("glpat-ok", simgitlab.User{Username: "bot", Name: "Bot", Email: "bot@example.com"})
	_, err := server.CreateProject("team/repo", map[string]string{"a.yaml": "a\n"})
	require.NoError(t, err)
	namespace := createTestNamespace(t)
	startGitProviderController(t, namespace, &controller.GitProviderReconciler{})
	createSecret(t, namespace, "gitlab-token", corev1.SecretTypeOpaque, map[string]string{"token": "glpat-ok"})
	provider := newProvider(namespace, server.URL()+"/team/repo.git", "gitlab-token")
	provider.Spec.Forge = &v1alpha3.ForgeSpec{Type: v1alpha3.ForgeGitLab}
	provider.Spec.Commit.Signing = &v1alpha3.CommitSigning{
		SecretRef: v1alpha3.SecretKeyReference{Name: "commit-signing"}, GenerateWhenMissing: true}
	key := createProvider(t, provider)

	got := waitForState(t, key, stalledState(metav1.ConditionTrue, v1alpha3.ReasonSigningUnsupported,
		"the gitlab forge's API cannot carry a commit signature", "forge.type git"))
	require.NotEmpty(t, got.Status.SigningPublicKey, "the key itself is fine and published")
}
