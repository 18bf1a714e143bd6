package manifest_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/manifest"
)

// TestTheWritePathParsesEachDocumentOnce counts YAML decodes over a commit
// (Plan, then Apply to the index): the desired document, the old one and
// the edited text are each parsed once, the edited text only when it is not
// the desired bytes already; the siblings in the file and the index update
// parse nothing.
func TestTheWritePathParsesEachDocumentOnce(t *testing.T) {
	tests := []struct {
		name       string
		op         manifest.Op
		planParses int
	}{
		{"an operator-written document: desired and old", upsert(configMapID("team-a", "second"), configMapYAML("team-a", "second", "changed")), 2},
		{"a commented document: desired, old and the edited text", upsert(configMapID("team-a", "first"), configMapYAML("team-a", "first", "changed")), 3},
		{"a new object: desired", upsert(configMapID("team-a", "new"), configMapYAML("team-a", "new", "1")), 1},
		{"a delete parses nothing", manifest.Delete{ID: configMapID("team-a", "first")}, 0},
		{"unchanged bytes parse nothing", upsert(configMapID("team-a", "second"), secondBody), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix := bundleIndex(t)
			before := manifest.IndexParses(ix)
			result, err := manifest.Plan(ix, []manifest.Op{tt.op})
			require.NoError(t, err)
			require.Equal(t, tt.planParses, manifest.PlanParses(result), "parses in Plan")
			require.NoError(t, ix.Apply(result))
			require.Equal(t, before, manifest.IndexParses(ix), "parses in Apply")
		})
	}
}
