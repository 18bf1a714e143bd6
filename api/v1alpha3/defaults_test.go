package v1alpha3_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
)

const (
	validGitProvider = `
kind: GitProvider
spec:
  url: https://git.example.com/org/repo.git
  allowedBranches: [main, "env/*"]
  secretRef: {name: git-credentials}
  knownHostsRef: {name: known-hosts}`
	validGitTarget = `
kind: GitTarget
spec:
  providerRef: {name: repo}
  branch: main
  path: clusters/prod
  allowedSourceNamespaces: {names: [team-a], selector: {matchLabels: {mirror: "true"}}}
  encryption: {age: {secretRef: {name: sops-age}, generateWhenMissing: true}}
  placement: {byType: {"apps/v1/deployments": "{namespace}/apps/{name}.yaml"}}`
	validWatchRule = `
kind: WatchRule
spec:
  targetRef: {name: prod}
  rules:
  - {operations: [CREATE, UPDATE, DELETE], apiGroups: [""], resources: [configmaps]}
  - {apiGroups: [apps], apiVersions: [v1], resources: [deployments], sourceNamespace: "*"}`
	validClusterWatchRule = `
kind: ClusterWatchRule
spec:
  targetRef: {name: prod, namespace: validation}
  rules: [{apiGroups: [rbac.authorization.k8s.io], resources: [clusterroles], scope: Cluster}]`
	validCommitRequest = `
kind: CommitRequest
spec: {targetRef: {name: prod}, message: "Release 1.2: tune limits", closeDelaySeconds: 10}`
	validClusterProvider = `
kind: ClusterProvider
spec: {allowedNamespaces: {names: [validation]}}`
)

// TestValidObjectsGetTheirDefaults creates a minimal valid object of each
// kind and reads back what the API server defaulted.
func TestValidObjectsGetTheirDefaults(t *testing.T) {
	ctx := context.Background()
	ensureNamespace(t, testNamespace)
	c := kube.Client()

	t.Run("GitProvider", func(t *testing.T) {
		require.NoError(t, c.Create(ctx, parseObject(t, validGitProvider, "defaults")))
		var gp v1alpha3.GitProvider
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: "defaults"}, &gp))
		require.Equal(t, 5*time.Second, gp.Spec.Push.CommitWindow.Duration)
		require.Equal(t, "GitOps Reverser", gp.Spec.Commit.Committer.Name)
		require.Equal(t, "noreply@configbutler.ai", gp.Spec.Commit.Committer.Email)
		require.Equal(t, v1alpha3.CommitModeAuthor, gp.Spec.Commit.Mode)
		require.Equal(t, "Secret", gp.Spec.KnownHostsRef.Kind)
		require.Equal(t, "known_hosts", gp.Spec.KnownHostsRef.Key)
	})
	t.Run("GitTarget", func(t *testing.T) {
		require.NoError(t, c.Create(ctx, parseObject(t, validGitTarget, "defaults")))
		var gt v1alpha3.GitTarget
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: "defaults"}, &gt))
		require.Equal(t, "default", gt.Spec.ClusterProviderRef.Name)
		require.Equal(t, "configbutler.ai", gt.Spec.ProviderRef.Group)
		require.Equal(t, "GitProvider", gt.Spec.ProviderRef.Kind)
		require.Equal(t, "sops", gt.Spec.Encryption.Provider)
	})
	t.Run("WatchRule", func(t *testing.T) {
		require.NoError(t, c.Create(ctx, parseObject(t, validWatchRule, "defaults")))
		var wr v1alpha3.WatchRule
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: "defaults"}, &wr))
		require.Len(t, wr.Spec.Rules, 2)
		require.Equal(t, "*", wr.Spec.Rules[1].SourceNamespace)
	})
	t.Run("ClusterWatchRule", func(t *testing.T) {
		require.NoError(t, c.Create(ctx, parseObject(t, validClusterWatchRule, "defaults")))
		var cwr v1alpha3.ClusterWatchRule
		require.NoError(t, c.Get(ctx, client.ObjectKey{Name: "defaults"}, &cwr))
		require.Equal(t, "validation", cwr.Spec.TargetRef.Namespace)
	})
	t.Run("CommitRequest", func(t *testing.T) {
		require.NoError(t, c.Create(ctx, parseObject(t, validCommitRequest, "defaults")))
		var cr v1alpha3.CommitRequest
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: "defaults"}, &cr))
		require.EqualValues(t, 10, *cr.Spec.CloseDelaySeconds)
	})
	t.Run("ClusterProvider", func(t *testing.T) {
		require.NoError(t, c.Create(ctx, parseObject(t, validClusterProvider, "defaults")))
		var cp v1alpha3.ClusterProvider
		require.NoError(t, c.Get(ctx, client.ObjectKey{Name: "defaults"}, &cp))
		require.EqualValues(t, 50, cp.Spec.QPS)
		require.EqualValues(t, 100, cp.Spec.Burst)
		require.Nil(t, cp.Spec.KubeConfig, "no kubeConfig: the operator's own cluster")
	})
}

// TestStatusIsASubresource checks that a spec write cannot set status and a
// status write cannot change spec, which controllers rely on.
func TestStatusIsASubresource(t *testing.T) {
	ctx := context.Background()
	ensureNamespace(t, testNamespace)
	c := kube.Client()
	require.NoError(t, c.Create(ctx, parseObject(t, validGitTarget, "status")))
	var gt v1alpha3.GitTarget
	key := client.ObjectKey{Namespace: testNamespace, Name: "status"}
	require.NoError(t, c.Get(ctx, key, &gt))

	gt.Status.ObservedGeneration = 7
	require.NoError(t, c.Update(ctx, &gt))
	require.NoError(t, c.Get(ctx, key, &gt))
	require.Zero(t, gt.Status.ObservedGeneration, "a main-resource update must not write status")

	gt.Status.ObservedGeneration = 7
	require.NoError(t, c.Status().Update(ctx, &gt))
	require.NoError(t, c.Get(ctx, key, &gt))
	require.EqualValues(t, 7, gt.Status.ObservedGeneration)
}
