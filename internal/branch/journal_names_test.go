package branch

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/manifest"
)

// A sweep is journaled by the names it found (version 2), and an entry a
// version 1 owner wrote, by whole identity, is read as it was meant: a
// rolling upgrade restores the older owner's sweep without deleting what
// it found.
func TestJournalKeepsASweepsNamesAndReadsAVersion1Sweep(t *testing.T) {
	scope := manifest.SweepScope{Kind: "ConfigMap", Namespace: "team"}
	data, journaled, err := EncodeJournal(JournalRecord{Window: 3,
		Event: SyncEvent{Target: coreTo, Sweep: &Sweep{Scope: scope, Names: []string{"one", "three"}}, CloseWindow: true}})
	require.NoError(t, err)
	require.True(t, journaled)
	require.Contains(t, string(data), `"v":2`)
	require.Contains(t, string(data), `"Names":["one","three"]`)
	rec, err := DecodeJournal(data)
	require.NoError(t, err)
	sync, ok := rec.Event.(SyncEvent)
	require.True(t, ok)
	require.Equal(t, scope, sync.Sweep.Scope)
	require.Equal(t, []string{"one", "three"}, slices.Collect(sync.Sweep.Found()))

	v1 := `{"v":1,"at":"2026-01-02T03:04:05Z","window":3,"sync":{"Target":{"Namespace":"team","Name":"mirror"},` +
		`"Sweep":{"Scope":{"Group":"","Kind":"ConfigMap","Namespace":"team"},"Present":[` +
		`{"Group":"","Version":"v1","Kind":"ConfigMap","Resource":"configmaps","Namespace":"team","Name":"one"}]},"CloseWindow":true}}`
	rec, err = DecodeJournal([]byte(v1))
	require.NoError(t, err)
	sync, ok = rec.Event.(SyncEvent)
	require.True(t, ok)
	require.Equal(t, []string{"one"}, slices.Collect(sync.Sweep.Found()))
	require.True(t, sync.CloseWindow)
}
