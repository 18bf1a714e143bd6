package engine

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/branch"
	"github.com/configbutler/gitops-reverser/internal/manifest"
	"github.com/configbutler/gitops-reverser/internal/rules"
	"github.com/configbutler/gitops-reverser/internal/watch"
)

var (
	secret = manifest.ObjectID{Version: "v1", Kind: "Secret", Resource: "secrets", Namespace: "team", Name: "db"}
	kustCM = manifest.ObjectID{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "team", Name: "kustomization"}
)

// TestARefusalLastsUntilTheObjectIsWrittenDeletedOrGone walks one object
// through each way out of the refused set.
func TestARefusalLastsUntilTheObjectIsWrittenDeletedOrGone(t *testing.T) {
	tests := []struct {
		name      string
		byPlanner bool
		lift      func(refusalSet) bool
		lifted    bool
	}{
		{"the mirror forwards it", false, func(s refusalSet) bool { return s.forwarded(secret, false) }, true},
		{"a planner refusal outlives a forward", true, func(s refusalSet) bool { return s.forwarded(secret, false) }, false},
		{"a plan carries it", true, func(s refusalSet) bool { return s.planned([]manifest.ObjectID{secret}) }, true},
		{"it is deleted", true, func(s refusalSet) bool { return s.forwarded(secret, true) }, true},
		{"a replay no longer reports it", false, func(s refusalSet) bool {
			return s.replayed(manifest.SweepScope{Kind: "Secret", Namespace: "team"}, []watch.ObjectKey{{Namespace: "team", Name: "other"}})
		}, true},
		{"a replay still reports it", false, func(s refusalSet) bool {
			return s.replayed(manifest.SweepScope{Kind: "Secret", Namespace: "team"}, []watch.ObjectKey{{Namespace: "team", Name: "db"}})
		}, false},
		{"no claim selects it", false, func(s refusalSet) bool {
			s.retain([]rules.Claim{{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap"}})
			return len(s) == 0
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := refusalSet{}
			require.True(t, s.refuse(Refusal{Object: secret, Reason: v1alpha3.ReasonEncryptionRequired}, tt.byPlanner))
			require.False(t, s.refuse(Refusal{Object: secret, Reason: v1alpha3.ReasonEncryptionRequired}, tt.byPlanner), "the same refusal again is not new")
			require.Equal(t, tt.lifted, tt.lift(s))
			require.Equal(t, tt.lifted, len(s.list()) == 0)
		})
	}
}

func TestRefusalsAreAnnouncedOnceAndListedByReason(t *testing.T) {
	s := refusalSet{}
	s.refuse(Refusal{Object: secret, Reason: v1alpha3.ReasonEncryptionRequired}, false)
	s.refuse(Refusal{Object: kustCM, Reason: v1alpha3.ReasonAuxiliaryPath, Detail: "reserved"}, true)
	require.Equal(t, []Refusal{{Object: kustCM, Reason: v1alpha3.ReasonAuxiliaryPath, Detail: "reserved"}, {Object: secret, Reason: v1alpha3.ReasonEncryptionRequired}}, s.unannounced())
	require.Empty(t, s.unannounced(), "announced once")
	s.refuse(Refusal{Object: kustCM, Reason: v1alpha3.ReasonAuxiliaryPath, Detail: "reserved"}, true)
	require.Empty(t, s.unannounced(), "refused again for the same reason: no new announcement")
	require.Len(t, s.list(), 2)
}

// TestAnObjectThePlannerRefusesAgainIsNotAnnouncedAgain: each update of a
// ConfigMap named kustomization is planned and refused again; it must not
// make a new Event each time.
func TestAnObjectThePlannerRefusesAgainIsNotAnnouncedAgain(t *testing.T) {
	e := New(Options{})
	key := branch.TargetKey{Namespace: "team", Name: "mirror"}
	e.targets[key] = &targetEntry{refused: refusalSet{}}
	refusal := []manifest.Refusal{{ID: kustCM, Reason: manifest.RefusalAuxiliaryPath}}
	e.planned(key, []manifest.ObjectID{kustCM}, refusal)
	require.Len(t, e.UnannouncedRefusals(key), 1)
	e.planned(key, []manifest.ObjectID{kustCM}, refusal)
	require.Empty(t, e.UnannouncedRefusals(key), "refused again: the same refusal")
	e.planned(key, []manifest.ObjectID{kustCM}, nil)
	require.Empty(t, e.targets[key].refused.list(), "planned without a refusal: written")
}
