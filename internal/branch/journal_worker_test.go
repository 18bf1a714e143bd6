package branch_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	yaml "go.yaml.in/yaml/v3"

	"github.com/configbutler/gitops-reverser/internal/branch"
)

// TestAWriteRestoredFromTheJournalCommitsAsTheLiveOneDid: the journal keeps
// no rendered tree; the planner parses the restored write's YAML and
// writes the same file as it does from the live write's tree.
func TestAWriteRestoredFromTheJournalCommitsAsTheLiveOneDid(t *testing.T) {
	live := cm("journaled", "1")
	var tree yaml.Node
	require.NoError(t, yaml.Unmarshal(live.YAML, &tree))
	live.Node = tree.Content[0]

	data, ok, err := branch.EncodeJournal(branch.JournalRecord{Event: branch.WriteEvent{Target: target, Write: live}})
	require.NoError(t, err)
	require.True(t, ok)
	rec, err := branch.DecodeJournal(data)
	require.NoError(t, err)
	restored := rec.Event.(branch.WriteEvent).Write
	require.Nil(t, restored.Node)

	w := newWorker(t, "journal-live", nil, nil)
	write(t, w, branch.Author{}, live)
	flush(t, w)
	w = newWorker(t, "journal-restored", nil, nil)
	write(t, w, branch.Author{}, restored)
	flush(t, w)
	path := "mirror/team/configmaps/journaled.yaml"
	require.Equal(t, show(t, "journal-live", path), show(t, "journal-restored", path))
	require.Contains(t, show(t, "journal-restored", path), `v: "1"`)
}
