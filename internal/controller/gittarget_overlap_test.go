package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
)

func TestPathsOverlapWhenOneContainsTheOther(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"clusters", "clusters", true},
		{"clusters", "clusters/a", true},
		{"clusters/a", "clusters", true},
		{".", "anything/below", true},
		{"clusters/a", "clusters/b", false},
		{"clusters/a", "clusters/ab", false},
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, pathsOverlap(tc.a, tc.b), "%q and %q", tc.a, tc.b)
	}
}

func TestTheOlderTargetClaimsFirstThenNamespaceThenName(t *testing.T) {
	earlier := metav1.NewTime(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	later := metav1.NewTime(earlier.Add(time.Second))
	target := func(ns, name string, created metav1.Time) *v1alpha3.GitTarget {
		return &v1alpha3.GitTarget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: created}}
	}
	tests := []struct {
		name        string
		first, then *v1alpha3.GitTarget
	}{
		{"older wins over a smaller namespace", target("z", "z", earlier), target("a", "a", later)},
		{"same age: smaller namespace", target("a", "z", earlier), target("b", "a", earlier)},
		{"same age and namespace: smaller name", target("a", "a", earlier), target("a", "b", earlier)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.True(t, claimedFirst(tc.first, tc.then))
			require.False(t, claimedFirst(tc.then, tc.first), "the decision is the same from both sides")
		})
	}
}
