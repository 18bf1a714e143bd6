package engine

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/configbutler/gitops-reverser/internal/branch"
	"github.com/configbutler/gitops-reverser/internal/rules"
)

// TestNotedClaimsJoinTheLocalClaimsAndTellTheRegistrarOnlyOfChanges: the
// claims of targets other replicas run are part of LocalClaims, merged;
// noting the same claims again tells the registrar nothing, forgetting
// them (nil, or the target deleted) tells it once.
func TestNotedClaimsJoinTheLocalClaimsAndTellTheRegistrarOnlyOfChanges(t *testing.T) {
	changes := 0
	e := New(Options{ClaimsChanged: func() { changes++ }})
	configMaps := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	claim := func(ns string) []rules.Claim {
		return []rules.Claim{{GVR: configMaps, Kind: "ConfigMap", Namespace: ns}}
	}
	a, b := branch.TargetKey{Namespace: "a", Name: "t"}, branch.TargetKey{Namespace: "b", Name: "t"}

	e.NoteClaims(a, claim("a"))
	e.NoteClaims(b, claim("b"))
	require.Equal(t, 2, changes)
	require.ElementsMatch(t, []string{"a", "b"}, namespacesOf(e.LocalClaims()))

	e.NoteClaims(a, claim("a"))
	require.Equal(t, 2, changes, "the same claims again change nothing")

	e.NoteClaims(a, nil)
	require.Equal(t, 3, changes)
	e.ForgetTarget(b)
	require.Equal(t, 4, changes)
	require.Empty(t, e.LocalClaims())
	e.ForgetTarget(b)
	require.Equal(t, 4, changes, "a target forgotten twice")

	e.NoteClaims(a, claim("a"))
	e.RemoveTarget(context.Background(), a) // moved away, or its ClusterProvider gone
	require.Equal(t, 6, changes)
	require.Empty(t, e.LocalClaims(), "a removed target's noted claims go with it")
}

func namespacesOf(claims []rules.Claim) []string {
	var out []string
	for _, c := range claims {
		out = append(out, c.Namespace)
	}
	return out
}
