package e2e

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/configbutler/gitops-reverser/test/harness"
)

// TestAClosedWatchResumesFromItsResourceVersion: the API server ends every
// watch that asks for no timeout within 2–4 s (--min-request-timeout=2),
// so the operator's watch is closed again and again; each time it resumes
// from its resourceVersion, without a replay, and the changes made after
// the resumes are committed.
func TestAClosedWatchResumesFromItsResourceVersion(t *testing.T) {
	useOwnControlPlane(t, harness.KubeOptions{ExtraFlags: map[string][]string{"min-request-timeout": {"2"}}})
	m := newMirror(t, "watch-resume", "configmaps")
	apply(t, configMap(m.ns, "before", map[string]string{"v": "1"}))
	startOperator(t)
	dir := m.path + "/watch-resume/configmaps/"
	eventually(t, "the replayed ConfigMap in Git", func() bool { return gitFile(t, m.repo, dir+"before.yaml") != "" })
	configMaps := map[string]string{"resource": "configmaps"}
	replays := metricSumWhere(t, "gitopsreverser_watch_replays_total", configMaps)
	require.Equal(t, 1.0, replays, "one replay, at start")
	eventually(t, "the watch closed and resumed twice", func() bool {
		return metricSumWhere(t, "gitopsreverser_watch_reconnects_total", configMaps) >= 2
	})

	apply(t, configMap(m.ns, "after", map[string]string{"v": "1"}))
	before := corev1.ConfigMap{}
	before.Namespace, before.Name = m.ns, "before"
	edit(t, &before, func() { before.Data["v"] = "2" })
	eventually(t, "the changes made after the resumes in Git", func() bool {
		return gitFile(t, m.repo, dir+"after.yaml") != "" && containsLine(gitFile(t, m.repo, dir+"before.yaml"), `  v: "2"`)
	})
	require.Equal(t, replays, metricSumWhere(t, "gitopsreverser_watch_replays_total", configMaps), "no replay after the start")
	require.Zero(t, metricSumWhere(t, "gitopsreverser_watch_gone_total", configMaps), "no resourceVersion expired")
}
