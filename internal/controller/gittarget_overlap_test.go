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

func TestOnlyATargetThatCanWriteHoldsItsPath(t *testing.T) {
	condition := func(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason}
	}
	committed := &v1alpha3.CommitReference{SHA: "abc"}
	tests := []struct {
		name          string
		conditions    []metav1.Condition
		lastCommit    *v1alpha3.CommitReference
		providerReady bool
		want          bool
	}{
		{"new, provider Ready", nil, nil, true, true},
		{"new, provider never Ready (credentials that cannot work)", nil, nil, false, false},
		{"validated, provider not Ready, never committed", []metav1.Condition{
			condition(v1alpha3.ConditionValidated, metav1.ConditionTrue, v1alpha3.ReasonSucceeded),
			condition(v1alpha3.ConditionGitPathAccepted, metav1.ConditionFalse, v1alpha3.ReasonGitProviderNotReady),
		}, nil, false, false},
		{"committed, provider blips unready", []metav1.Condition{
			condition(v1alpha3.ConditionValidated, metav1.ConditionTrue, v1alpha3.ReasonSucceeded),
			condition(v1alpha3.ConditionGitPathAccepted, metav1.ConditionFalse, v1alpha3.ReasonGitProviderNotReady),
		}, committed, false, true},
		{"branch not allowed, provider Ready", []metav1.Condition{
			condition(v1alpha3.ConditionValidated, metav1.ConditionFalse, v1alpha3.ReasonBranchNotAllowed),
		}, nil, true, false},
		{"branch not allowed after committing", []metav1.Condition{
			condition(v1alpha3.ConditionValidated, metav1.ConditionFalse, v1alpha3.ReasonBranchNotAllowed),
		}, committed, true, false},
		{"itself refused for an overlap", []metav1.Condition{
			condition(v1alpha3.ConditionValidated, metav1.ConditionFalse, v1alpha3.ReasonPathOverlap),
		}, nil, true, false},
		{"namespace not allowed by its ClusterProvider", []metav1.Condition{
			condition(v1alpha3.ConditionValidated, metav1.ConditionTrue, v1alpha3.ReasonSucceeded),
			condition(v1alpha3.ConditionClusterProviderReady, metav1.ConditionFalse, v1alpha3.ReasonNamespaceNotAllowed),
		}, committed, true, false},
		{"source unreachable for a moment", []metav1.Condition{
			condition(v1alpha3.ConditionValidated, metav1.ConditionTrue, v1alpha3.ReasonSucceeded),
			condition(v1alpha3.ConditionClusterProviderReady, metav1.ConditionTrue, v1alpha3.ReasonSucceeded),
			condition(v1alpha3.ConditionSourceClusterReachable, metav1.ConditionFalse, v1alpha3.ReasonSourceUnreachable),
		}, nil, true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := &v1alpha3.GitTarget{Status: v1alpha3.GitTargetStatus{LastCommit: tc.lastCommit}}
			o.Status.Conditions = tc.conditions
			require.Equal(t, tc.want, holdsPath(o, tc.providerReady))
		})
	}
}

func TestAPathClaimSignalChangesWithWhatHoldsPathReads(t *testing.T) {
	base := &v1alpha3.GitTarget{}
	validated := base.DeepCopy()
	validated.Status.Conditions = []metav1.Condition{{Type: v1alpha3.ConditionValidated, Status: metav1.ConditionTrue}}
	refused := base.DeepCopy()
	refused.Status.Conditions = []metav1.Condition{{Type: v1alpha3.ConditionValidated, Status: metav1.ConditionFalse}}
	committed := validated.DeepCopy()
	committed.Status.LastCommit = &v1alpha3.CommitReference{SHA: "abc"}
	nextCommit := committed.DeepCopy()
	nextCommit.Status.LastCommit.SHA = "def"
	notWritable := validated.DeepCopy()
	notWritable.Status.Conditions = append(notWritable.Status.Conditions,
		metav1.Condition{Type: v1alpha3.ConditionGitPathAccepted, Status: metav1.ConditionFalse})

	require.NotEqual(t, pathClaimSignal(base), pathClaimSignal(validated), "first checked")
	require.NotEqual(t, pathClaimSignal(validated), pathClaimSignal(refused), "refused on its own")
	require.NotEqual(t, pathClaimSignal(validated), pathClaimSignal(committed), "first commit")
	require.Equal(t, pathClaimSignal(committed), pathClaimSignal(nextCommit), "later commits change nothing")
	require.Equal(t, pathClaimSignal(validated), pathClaimSignal(notWritable), "conditions holdsPath does not read")
}
