package controller_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/controller"
	"github.com/configbutler/gitops-reverser/test/harness"
)

const (
	testHTTPUser     = "mirror-bot"
	testHTTPPassword = "correct-horse-battery"
)

// startHTTPScenario starts a git server demanding basic auth, a namespace
// and the controller in a manager.
func startHTTPScenario(t *testing.T) (*harness.GitServer, string) {
	t.Helper()
	server := startTestGitServer(t, harness.GitServerOptions{HTTPUsername: testHTTPUser, HTTPPassword: testHTTPPassword})
	namespace := createTestNamespace(t)
	startGitProviderController(t, namespace, &controller.GitProviderReconciler{})
	return server, namespace
}

func TestGitProviderOverHTTPWithBasicAuthBecomesReady(t *testing.T) {
	t.Parallel()
	server, namespace := startHTTPScenario(t)
	createSecret(t, namespace, "git-creds", corev1.SecretTypeBasicAuth,
		map[string]string{"username": testHTTPUser, "password": testHTTPPassword})
	key := createProvider(t, newProvider(namespace, server.HTTPURL("repo"), "git-creds"))

	provider := waitForState(t, key, readyState())
	require.Equal(t, v1alpha3.ForgeGit, provider.Status.Forge, "an http URL on an unknown host is a plain git remote")
	require.Nil(t, meta.FindStatusCondition(provider.Status.Conditions, v1alpha3.ConditionSigningKeyReady),
		"no signing configured, no signing condition")
}

// TestGitProviderRecoversWhenTheSecretIsFixed proves the Secret watch: the
// recheck interval is far longer than the test, so only the Secret change
// can bring the provider back.
func TestGitProviderRecoversWhenTheSecretIsFixed(t *testing.T) {
	t.Parallel()
	server, namespace := startHTTPScenario(t)
	createSecret(t, namespace, "git-creds", corev1.SecretTypeBasicAuth,
		map[string]string{"username": testHTTPUser, "password": "wrong"})
	key := createProvider(t, newProvider(namespace, server.HTTPURL("repo"), "git-creds"))

	waitForState(t, key, stalledState(metav1.ConditionFalse, v1alpha3.ReasonUnauthorized,
		"refused the credentials in Secret "+namespace+"/git-creds"))

	updateSecret(t, client.ObjectKey{Namespace: namespace, Name: "git-creds"},
		map[string]string{"username": testHTTPUser, "password": testHTTPPassword})
	waitForState(t, key, readyState())
}

func TestGitProviderWaitsForAMissingSecret(t *testing.T) {
	t.Parallel()
	server, namespace := startHTTPScenario(t)
	key := createProvider(t, newProvider(namespace, server.HTTPURL("repo"), "git-creds"))

	waitForState(t, key, stalledState(metav1.ConditionUnknown, v1alpha3.ReasonSecretNotFound,
		fmt.Sprintf("Secret %s/git-creds (spec.secretRef) not found", namespace)))

	createSecret(t, namespace, "git-creds", corev1.SecretTypeOpaque,
		map[string]string{"username": testHTTPUser, "password": testHTTPPassword})
	waitForState(t, key, readyState())
}

// TestGitProviderUnreachableRemoteIsRetried points at a port nothing
// listens on: a network failure is not the user's to fix, so the provider
// is Reconciling (retried with backoff), not Stalled.
func TestGitProviderUnreachableRemoteIsRetried(t *testing.T) {
	t.Parallel()
	namespace := createTestNamespace(t)
	startGitProviderController(t, namespace, &controller.GitProviderReconciler{})
	port, err := harness.FreePort()
	require.NoError(t, err)
	url := fmt.Sprintf("http://127.0.0.1:%d/repo.git", port)
	key := createProvider(t, newProvider(namespace, url, ""))

	waitForState(t, key, retryingState(v1alpha3.ReasonRepositoryUnreachable, url+" did not answer"))
}

// TestGitProviderNoticesTheRemoteGoingAway proves the periodic recheck of a
// Ready provider: nothing in Kubernetes changes, only the remote.
func TestGitProviderNoticesTheRemoteGoingAway(t *testing.T) {
	t.Parallel()
	server := startTestGitServer(t, harness.GitServerOptions{})
	namespace := createTestNamespace(t)
	startGitProviderController(t, namespace, &controller.GitProviderReconciler{RecheckInterval: time.Second})
	key := createProvider(t, newProvider(namespace, server.HTTPURL("repo"), ""))
	waitForState(t, key, readyState())

	require.NoError(t, os.RemoveAll(server.RepoPath("repo")))
	waitForState(t, key, stalledState(metav1.ConditionFalse, v1alpha3.ReasonRepositoryUnreachable, "not found"))
}

func TestGitProviderOverSSHBecomesReady(t *testing.T) {
	t.Parallel()
	keyPEM, publicKey, err := harness.GenerateSSHKeyPair()
	require.NoError(t, err)
	server := startTestGitServer(t, harness.GitServerOptions{AuthorizedKeys: []ssh.PublicKey{publicKey}})
	namespace := createTestNamespace(t)
	startGitProviderController(t, namespace, &controller.GitProviderReconciler{})

	t.Run("flux secret with identity and known_hosts", func(t *testing.T) {
		createSecret(t, namespace, "flux-ssh", corev1.SecretTypeOpaque,
			map[string]string{"identity": string(keyPEM), "known_hosts": server.KnownHosts()})
		provider := newProvider(namespace, server.SSHURL("repo"), "flux-ssh")
		provider.Name = "flux"
		waitForState(t, createProvider(t, provider), readyState())
	})
	t.Run("ssh-auth secret with known_hosts from a ConfigMap", func(t *testing.T) {
		createSecret(t, namespace, "native-ssh", corev1.SecretTypeSSHAuth, map[string]string{"ssh-privatekey": string(keyPEM)})
		require.NoError(t, kube.Client().Create(context.Background(), &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "known-hosts"},
			Data:       map[string]string{"known_hosts": server.KnownHosts()},
		}))
		provider := newProvider(namespace, server.SSHURL("repo"), "native-ssh")
		provider.Name = "native"
		provider.Spec.KnownHostsRef = &v1alpha3.KnownHostsReference{Kind: "ConfigMap", Name: "known-hosts"}
		waitForState(t, createProvider(t, provider), readyState())
	})
	t.Run("without known_hosts the user is told where to put them", func(t *testing.T) {
		provider := newProvider(namespace, server.SSHURL("repo"), "native-ssh")
		provider.Name = "no-known-hosts"
		waitForState(t, createProvider(t, provider), stalledState(metav1.ConditionUnknown, v1alpha3.ReasonInvalidCredentials,
			"set spec.knownHostsRef to a Secret or ConfigMap with known_hosts, or add a known_hosts key"))
	})
}

func TestGitProviderAsksForGitHubCredentials(t *testing.T) {
	t.Parallel()
	namespace := createTestNamespace(t)
	startGitProviderController(t, namespace, &controller.GitProviderReconciler{})
	provider := newProvider(namespace, "https://github.com/configbutler/example.git", "")
	provider.Spec.Forge = &v1alpha3.ForgeSpec{Type: v1alpha3.ForgeGitHub}
	key := createProvider(t, provider)

	got := waitForState(t, key, stalledState(metav1.ConditionUnknown, v1alpha3.ReasonInvalidCredentials,
		"the GitHub API needs a GitHub App", "or a token"))
	require.Equal(t, v1alpha3.ForgeGitHub, got.Status.Forge)
}

func TestGitProviderRefusesAnInvalidMessageTemplate(t *testing.T) {
	t.Parallel()
	server := startTestGitServer(t, harness.GitServerOptions{})
	namespace := createTestNamespace(t)
	startGitProviderController(t, namespace, &controller.GitProviderReconciler{})
	provider := newProvider(namespace, server.HTTPURL("repo"), "")
	provider.Spec.Commit.Message = &v1alpha3.CommitMessageTemplates{GroupTemplate: "Update {{.Target"}
	key := createProvider(t, provider)

	waitForState(t, key, stalledState(metav1.ConditionUnknown, v1alpha3.ReasonInvalidSpec, "spec.commit.message", "groupTemplate"))
}
