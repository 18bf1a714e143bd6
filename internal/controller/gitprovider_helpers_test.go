package controller_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/controller"
	"github.com/configbutler/gitops-reverser/test/harness"
)

// stateTimeout is how long a test waits for a GitProvider to reach a state.
// It is generous because it is polling, not a timing assertion: a loaded
// machine may take a while to start the manager and run git.
const stateTimeout = 90 * time.Second

// createTestNamespace makes a namespace only this test uses.
func createTestNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "gitprovider-"}}
	require.NoError(t, kube.Client().Create(context.Background(), ns))
	return ns.Name
}

// startGitProviderController runs reconciler in a real manager against the
// test API server, caching only namespace so tests running side by side
// do not see each other's objects. It stops when the test ends.
func startGitProviderController(t *testing.T, namespace string, reconciler *controller.GitProviderReconciler) {
	t.Helper()
	mgr, err := ctrl.NewManager(kube.Config(), ctrl.Options{
		Scheme:  kube.Scheme(),
		Logger:  testLogger(t),
		Metrics: metricsserver.Options{BindAddress: "0"},
		Cache:   cache.Options{DefaultNamespaces: map[string]cache.Config{namespace: {}}},
		// Every test registers a controller named "gitprovider" in its own
		// manager; the names are unique per manager, not per process.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	require.NoError(t, err)
	require.NoError(t, reconciler.SetupWithManager(mgr))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
}

// testLogger logs to t until the test ends and drops lines after that: a
// stopped manager still logs from goroutines that outlive Start, and
// testing panics on a log after its test completed.
func testLogger(t *testing.T) logr.Logger {
	var mu sync.Mutex
	ended := false
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		ended = true
	})
	return funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		if !ended {
			t.Log(prefix, args)
		}
	}, funcr.Options{})
}

// startTestGitServer starts a git server (HTTP and SSH) for this test, with
// an empty repository "repo".
func startTestGitServer(t *testing.T, options harness.GitServerOptions) *harness.GitServer {
	t.Helper()
	server, err := harness.StartGitServer(t.TempDir(), options)
	require.NoError(t, err)
	t.Cleanup(server.Stop)
	_, err = server.CreateBareRepo("repo")
	require.NoError(t, err)
	return server
}

func createSecret(t *testing.T, namespace, name string, secretType corev1.SecretType, data map[string]string) *corev1.Secret {
	t.Helper()
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Type:       secretType,
		StringData: data,
	}
	require.NoError(t, kube.Client().Create(context.Background(), secret))
	return secret
}

// newProvider is a GitProvider for url in namespace, referencing the Secret
// secretName when it is not empty.
func newProvider(namespace, url, secretName string) *v1alpha3.GitProvider {
	provider := &v1alpha3.GitProvider{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "repo"},
		Spec:       v1alpha3.GitProviderSpec{URL: url, AllowedBranches: []string{"main"}},
	}
	if secretName != "" {
		provider.Spec.SecretRef = &v1alpha3.LocalObjectReference{Name: secretName}
	}
	return provider
}

func createProvider(t *testing.T, provider *v1alpha3.GitProvider) client.ObjectKey {
	t.Helper()
	require.NoError(t, kube.Client().Create(context.Background(), provider))
	return client.ObjectKeyFromObject(provider)
}

// expectedState is what the summary and RepositoryReachable conditions of
// a GitProvider should say.
type expectedState struct {
	ready, stalled, reconciling, reachable metav1.ConditionStatus
	// reason is expected on Ready (and on the summary condition that is
	// True).
	reason string
	// messageContains are substrings of Ready's message.
	messageContains []string
}

func readyState() expectedState {
	return expectedState{
		ready: metav1.ConditionTrue, stalled: metav1.ConditionFalse, reconciling: metav1.ConditionFalse,
		reachable: metav1.ConditionTrue, reason: v1alpha3.ReasonSucceeded,
	}
}

func stalledState(reachable metav1.ConditionStatus, reason string, messageContains ...string) expectedState {
	return expectedState{
		ready: metav1.ConditionFalse, stalled: metav1.ConditionTrue, reconciling: metav1.ConditionFalse,
		reachable: reachable, reason: reason, messageContains: messageContains,
	}
}

func retryingState(reason string, messageContains ...string) expectedState {
	return expectedState{
		ready: metav1.ConditionFalse, stalled: metav1.ConditionFalse, reconciling: metav1.ConditionTrue,
		reachable: metav1.ConditionFalse, reason: reason, messageContains: messageContains,
	}
}

// waitForState polls the GitProvider until its conditions, for its current
// generation, say want, and returns it. On timeout the failure shows the
// last mismatch.
func waitForState(t *testing.T, key client.ObjectKey, want expectedState) *v1alpha3.GitProvider {
	t.Helper()
	var provider v1alpha3.GitProvider
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		require.NoError(c, kube.Client().Get(context.Background(), key, &provider))
		require.Equal(c, provider.Generation, provider.Status.ObservedGeneration, "status describes the current generation")
		ready := requireCondition(c, &provider, v1alpha3.ConditionReady, want.ready)
		require.Equal(c, want.reason, ready.Reason, "Ready's reason; message: %s", ready.Message)
		for _, part := range want.messageContains {
			require.Contains(c, ready.Message, part)
		}
		requireCondition(c, &provider, v1alpha3.ConditionStalled, want.stalled)
		requireCondition(c, &provider, v1alpha3.ConditionReconciling, want.reconciling)
		requireCondition(c, &provider, v1alpha3.ConditionRepositoryReachable, want.reachable)
	}, stateTimeout, 100*time.Millisecond)
	return &provider
}

func requireCondition(c require.TestingT, provider *v1alpha3.GitProvider, conditionType string, status metav1.ConditionStatus) *metav1.Condition {
	condition := meta.FindStatusCondition(provider.Status.Conditions, conditionType)
	require.NotNil(c, condition, "condition %s is set", conditionType)
	require.Equal(c, status, condition.Status, "%s is %s (%s: %s)", conditionType, status, condition.Reason, condition.Message)
	require.Equal(c, provider.Generation, condition.ObservedGeneration, "%s describes the current generation", conditionType)
	return condition
}

// updateSecret replaces a Secret's data, as a user fixing it would.
func updateSecret(t *testing.T, key client.ObjectKey, data map[string]string) {
	t.Helper()
	var secret corev1.Secret
	require.NoError(t, kube.Client().Get(context.Background(), key, &secret))
	secret.Data = nil
	secret.StringData = data
	require.NoError(t, kube.Client().Update(context.Background(), &secret))
}
