package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
)

// TestDeletingTheWatchRuleKeepsItsFilesButNotTheDeletesItSaw: deleting the
// WatchRule that claims a type stops the mirroring of that type; the
// files it wrote stay in Git, no longer managed (nothing prunes them). An
// object deleted in the same command, just before the rule, is still
// removed from Git: its deletion happened while the rule held, and the
// stream had seen it, waiting for its author, when the rule went away.
func TestDeletingTheWatchRuleKeepsItsFilesButNotTheDeletesItSaw(t *testing.T) {
	m := newMirror(t, "attr-rule-deleted", "configmaps")
	startOperatorWith(t, withAttribution(10*time.Second))
	waitReady(t, m.ns, m.target)
	ctx := context.Background()
	alice := actor(t, "alice", nil)
	dir := m.path + "/attr-rule-deleted/configmaps/"
	for _, name := range []string{"gone", "kept"} {
		require.NoError(t, alice.Create(ctx, configMap(m.ns, name, map[string]string{"k": "v"})))
	}
	eventually(t, "both ConfigMaps in Git", func() bool {
		return gitFile(t, m.repo, dir+"gone.yaml") != "" && gitFile(t, m.repo, dir+"kept.yaml") != ""
	})

	// kubectl delete -f: the ConfigMap, then the rule, one after the other.
	require.NoError(t, alice.Delete(ctx, configMap(m.ns, "gone", nil)))
	require.NoError(t, alice.Delete(ctx, &v1alpha3.WatchRule{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "rule"}}))

	eventually(t, "the ConfigMap deleted with the rule removed from Git", func() bool {
		return gitFile(t, m.repo, dir+"gone.yaml") == ""
	})
	require.Equal(t, gitAuthor("alice"), authorOf(t, m, dir+"gone.yaml"), "its author waited for, not given up on:\n%s", gitLog(t, m.repo))
	require.NotEmpty(t, gitFile(t, m.repo, dir+"kept.yaml"), "the rule's other files stay in Git:\n%s", gitLog(t, m.repo))
}
