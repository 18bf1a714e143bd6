package facts_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/facts"
)

func TestDecodeEventList(t *testing.T) {
	cases := []struct {
		name      string
		body      string
		events    int
		notAList  bool
		malformed bool
	}{
		{name: "an empty list", body: `{"kind":"EventList","apiVersion":"audit.k8s.io/v1","metadata":{},"items":[]}`},
		{name: "a list without items", body: `{"kind":"EventList","apiVersion":"audit.k8s.io/v1"}`},
		{name: "one event", body: `{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[{"auditID":"x","stage":"ResponseComplete"}]}`, events: 1},
		{name: "the wrong version", body: `{"kind":"EventList","apiVersion":"audit.k8s.io/v1beta1","items":[]}`, notAList: true},
		{name: "another kind", body: `{"kind":"Event","apiVersion":"audit.k8s.io/v1"}`, notAList: true},
		{name: "no type at all", body: `{"items":[]}`, notAList: true},
		{name: "not JSON", body: `<xml/>`, malformed: true},
		{name: "truncated", body: `{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[{"auditID":`, malformed: true},
		{name: "trailing data", body: `{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[]} {}`, malformed: true},
		{name: "an array", body: `[]`, malformed: true},
		{name: "a bad timestamp", body: `{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[{"stageTimestamp":"yesterday"}]}`, malformed: true},
		{name: "empty", body: ``, malformed: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			events, err := facts.DecodeEventList([]byte(tc.body))
			if tc.notAList || tc.malformed {
				require.Error(t, err)
				require.Nil(t, events)
				require.Equal(t, tc.notAList, errors.Is(err, facts.ErrNotEventList), "%v", err)
				return
			}
			require.NoError(t, err)
			require.NotNil(t, events)
			require.Len(t, events, tc.events)
		})
	}
}

// FuzzDecodeEventList: whatever the body, the parser never panics and
// returns either an error or events, never both nor neither; and Extract
// never panics on anything it returns.
func FuzzDecodeEventList(f *testing.F) {
	seeds, err := filepath.Glob(filepath.Join("testdata", "audit", "*.json"))
	require.NoError(f, err)
	for _, path := range seeds {
		body, err := os.ReadFile(path)
		require.NoError(f, err)
		f.Add(body)
	}
	f.Add([]byte(`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[{"stage":"ResponseComplete","verb":"deletecollection",` +
		`"responseStatus":{"code":200},"objectRef":{"resource":"x"},"responseObject":{"kind":"Status","details":null}}]}`))
	f.Add([]byte(`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":null}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		events, err := facts.DecodeEventList(body)
		if err != nil {
			require.Nil(t, events)
			return
		}
		require.NotNil(t, events)
		for i := range events {
			fact, outcome := facts.Extract(&events[i], "fuzz")
			require.Contains(t, facts.Outcomes(), outcome)
			if outcome != facts.OutcomeQueued {
				require.Zero(t, fact)
			}
		}
	})
}
