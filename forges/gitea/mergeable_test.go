package gitea

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges"
)

// TestGiteaMergeableFalseIsAConflictOnlyWhenTheBaseMoved: Gitea's
// mergeable is false while it checks too; a base still at the merge base
// cannot conflict.
func TestGiteaMergeableFalseIsAConflictOnlyWhenTheBaseMoved(t *testing.T) {
	open := func(mergeable bool, mergeBase, base string) pullResponse {
		p := pullResponse{State: "open", Mergeable: mergeable, MergeBase: mergeBase}
		p.Base.SHA = base
		return p
	}
	for name, c := range map[string]struct {
		pull pullResponse
		want forges.MergeState
	}{
		"mergeable":                       {open(true, "a", "b"), forges.MergeClean},
		"checking, the base did not move": {open(false, "a", "a"), forges.MergeClean},
		"the base moved":                  {open(false, "a", "b"), forges.MergeConflicting},
		"no merge base yet":               {open(false, "", "b"), forges.MergeUnknown},
		"merged":                          {pullResponse{State: "closed", Merged: true}, forges.MergeUnknown},
	} {
		require.Equal(t, c.want, c.pull.mergeState(), name)
	}
}
