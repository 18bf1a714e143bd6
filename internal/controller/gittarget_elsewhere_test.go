package controller_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/branch"
	"github.com/configbutler/gitops-reverser/internal/controller"
	"github.com/configbutler/gitops-reverser/internal/engine"
	"github.com/configbutler/gitops-reverser/internal/rules"
)

// ownsNothing is the assignment of a replica that another replica's
// branches all belong to.
type ownsNothing struct{}

func (ownsNothing) Owns(branch.Key) bool     { return false }
func (ownsNothing) Assigned(branch.Key) bool { return false }
func (ownsNothing) Token() string            { return "" }
func (ownsNothing) Kick()                    {}

// TestAReplicaNotesTheClaimsOfTargetsAnotherRuns: with several replicas
// and the admission observer on, the elected replica registers the
// observer for every replica's GitTargets, so a replica compiles the
// claims of a target it does not run (and writes none of its status).
// Against the real API server: a WatchRule on ConfigMaps for a target
// another replica owns is among this replica's LocalClaims; deleting the
// target forgets them.
func TestAReplicaNotesTheClaimsOfTargetsAnotherRuns(t *testing.T) {
	ctx := context.Background()
	ns := createTestNamespace(t)
	provider := "elsewhere-" + ns
	create := func(obj client.Object) {
		require.NoError(t, kube.Client().Create(ctx, obj))
	}
	create(&v1alpha3.ClusterProvider{ObjectMeta: metav1.ObjectMeta{Name: provider},
		Spec: v1alpha3.ClusterProviderSpec{AllowedNamespaces: &v1alpha3.NamespacePolicy{Names: []string{ns}}}})
	t.Cleanup(func() {
		_ = kube.Client().Delete(ctx, &v1alpha3.ClusterProvider{ObjectMeta: metav1.ObjectMeta{Name: provider}})
	})
	target := &v1alpha3.GitTarget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mirror"},
		Spec: v1alpha3.GitTargetSpec{ProviderRef: v1alpha3.GitProviderReference{Name: "repo"}, Branch: "main", Path: "live",
			ClusterProviderRef: &v1alpha3.ClusterProviderReference{Name: provider}}}
	create(target)
	create(&v1alpha3.WatchRule{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "configmaps"},
		Spec: v1alpha3.WatchRuleSpec{TargetRef: v1alpha3.TargetReference{Name: "mirror"},
			Rules: []v1alpha3.NamespacedResourceRule{{ResourceSelector: v1alpha3.ResourceSelector{Resources: []string{"configmaps"}}}}}})

	var changed atomic.Int32
	eng := engine.New(engine.Options{LocalConfig: kube.Config(), Ownership: ownsNothing{}, Log: testLogger(t),
		ClaimsChanged: func() { changed.Add(1) }})
	mgr, err := ctrl.NewManager(kube.Config(), ctrl.Options{
		Scheme: kube.Scheme(), Logger: testLogger(t), Metrics: metricsserver.Options{BindAddress: "0"},
		Cache:      cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	require.NoError(t, err)
	require.NoError(t, mgr.Add(eng))
	require.NoError(t, (&controller.GitTargetReconciler{Client: mgr.GetClient(), SecretReader: mgr.GetAPIReader(), Engine: eng,
		LocalConfig: kube.Config(), EveryReplica: true, NoteClaimsElsewhere: true}).SetupWithManager(mgr))
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(runCtx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})

	configMaps := rules.Claim{Kind: "ConfigMap", Namespace: ns}
	configMaps.GVR.Version, configMaps.GVR.Resource = "v1", "configmaps"
	require.Eventually(t, func() bool {
		for _, c := range eng.LocalClaims() {
			if c.GVR == configMaps.GVR && c.Namespace == ns {
				return true
			}
		}
		return false
	}, stateTimeout, 50*time.Millisecond, "the ConfigMaps of %s among the claims", ns)
	require.Positive(t, changed.Load(), "the registrar is told")

	var seen v1alpha3.GitTarget
	require.NoError(t, kube.Client().Get(ctx, client.ObjectKeyFromObject(target), &seen))
	require.Empty(t, seen.Status.Conditions, "the owner writes the status, not this replica")

	before := changed.Load()
	require.NoError(t, kube.Client().Delete(ctx, target))
	require.Eventually(t, func() bool { return len(eng.LocalClaims()) == 0 }, stateTimeout, 50*time.Millisecond,
		"a deleted target's claims are forgotten")
	require.Greater(t, changed.Load(), before)
}
