package e2e

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
)

// TestSuspendStopsWritingAndResumeCatchesUpInOneCommit: a suspended
// GitTarget sees the cluster's changes but commits none of them; resumed,
// one commit brings its path to the cluster's state.
//
// "No commit" is proved with a sentinel, not a wait: a second GitTarget
// writes the same branch through the same GitProvider, so the same branch
// worker (one FIFO loop) handles both. Once the suspended target's streams
// have handed over the last edit (its delete is counted) and the sentinel's
// later change is in Git, anything the suspended target had handed the
// worker would be in Git too.
func TestSuspendStopsWritingAndResumeCatchesUpInOneCommit(t *testing.T) {
	m := newMirror(t, "suspend", "configmaps")
	sentinelPath := "sentinel/" + m.ns
	apply(t,
		&v1alpha3.GitTarget{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "sentinel"},
			Spec: v1alpha3.GitTargetSpec{ProviderRef: v1alpha3.GitProviderReference{Name: "repo"}, Branch: "main", Path: sentinelPath}},
		watchRule(m.ns, "sentinel", "sentinel", "serviceaccounts"),
		configMap(m.ns, "edited", map[string]string{"k": "before"}),
		configMap(m.ns, "removed", map[string]string{"k": "v"}),
	)
	file := func(name string) string { return gitFile(t, m.repo, m.path+"/suspend/configmaps/"+name+".yaml") }
	startOperator(t)
	eventually(t, "the ConfigMaps in Git", func() bool { return file("edited") != "" && file("removed") != "" })
	waitReady(t, m.ns, m.target)
	waitReady(t, m.ns, "sentinel")
	before := commitsTouching(t, m.repo, m.path)

	target := &v1alpha3.GitTarget{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: m.target}}
	edit(t, target, func() { target.Spec.Suspend = true })
	waitSuspended(t, m.ns, m.target)
	deletes := metricSumWhere(t, "gitopsreverser_target_events_total",
		map[string]string{"gittarget_namespace": m.ns, "gittarget": m.target, "kind": "delete"})

	edited := configMap(m.ns, "edited", nil)
	edit(t, edited, func() { edited.Data = map[string]string{"k": "after"} })
	apply(t, configMap(m.ns, "added", map[string]string{"k": "new"}))
	require.NoError(t, env.kube.Client().Delete(t.Context(), configMap(m.ns, "removed", nil)))
	eventually(t, "the suspended target's stream saw the delete", func() bool {
		return metricSumWhere(t, "gitopsreverser_target_events_total",
			map[string]string{"gittarget_namespace": m.ns, "gittarget": m.target, "kind": "delete"}) > deletes
	})
	apply(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "sentinel-1"}})
	eventually(t, "the sentinel's commit", func() bool {
		return gitFile(t, m.repo, sentinelPath+"/suspend/serviceaccounts/sentinel-1.yaml") != ""
	})
	require.Equal(t, before, commitsTouching(t, m.repo, m.path), "no commit for the suspended target")
	require.Contains(t, file("edited"), "before")
	require.Empty(t, file("added"))
	require.NotEmpty(t, file("removed"))

	edit(t, target, func() { target.Spec.Suspend = false })
	eventually(t, "the catch-up in Git", func() bool {
		return strings.Contains(file("edited"), "after") && file("added") != "" && file("removed") == ""
	})
	waitReady(t, m.ns, m.target)
	apply(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "sentinel-2"}})
	eventually(t, "the sentinel's second commit", func() bool {
		return gitFile(t, m.repo, sentinelPath+"/suspend/serviceaccounts/sentinel-2.yaml") != ""
	})
	require.Equal(t, before+1, commitsTouching(t, m.repo, m.path), "one catch-up commit")
}

// waitSuspended waits for Ready=False/Suspended, with neither Stalled nor
// Reconciling True, for the GitTarget's current generation.
func waitSuspended(t *testing.T, ns, name string) {
	t.Helper()
	eventually(t, "GitTarget "+ns+"/"+name+" Suspended", func() bool {
		ready := targetCondition(t, ns, name, v1alpha3.ConditionReady)
		return ready != nil && ready.Status == metav1.ConditionFalse && ready.Reason == v1alpha3.ReasonSuspended &&
			conditionStatus(t, ns, name, v1alpha3.ConditionStalled) == metav1.ConditionFalse &&
			conditionStatus(t, ns, name, v1alpha3.ConditionReconciling) == metav1.ConditionFalse
	})
}

// commitsTouching counts the commits on main that change something under
// path.
func commitsTouching(t *testing.T, repo, path string) int {
	t.Helper()
	out, err := env.git.Git(repo, "rev-list", "--count", "main", "--", path)
	require.NoError(t, err)
	n, err := strconv.Atoi(strings.TrimSpace(out))
	require.NoError(t, err)
	return n
}
