package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
)

// summary is the kstatus triple (Ready, Stalled, Reconciling) as statuses.
func summary(s conditionSet) [3]metav1.ConditionStatus {
	var out [3]metav1.ConditionStatus
	for i, conditionType := range []string{v1alpha3.ConditionReady, v1alpha3.ConditionStalled, v1alpha3.ConditionReconciling} {
		if condition := s.find(conditionType); condition != nil {
			out[i] = condition.Status
		}
	}
	return out
}

func TestConditionSetWritesTheSummaryAsATriple(t *testing.T) {
	var conditions []metav1.Condition
	s := newConditionSet(&conditions, 3)
	const (
		isTrue  = metav1.ConditionTrue
		isFalse = metav1.ConditionFalse
	)

	s.markReconciling(v1alpha3.ReasonProgressing, "working")
	require.Equal(t, [3]metav1.ConditionStatus{isFalse, isFalse, isTrue}, summary(s))
	s.markStalled(v1alpha3.ReasonInvalidSpec, "fix the spec")
	require.Equal(t, [3]metav1.ConditionStatus{isFalse, isTrue, isFalse}, summary(s))
	require.Equal(t, "fix the spec", s.find(v1alpha3.ConditionReady).Message, "Ready repeats what to fix")
	s.markReady(v1alpha3.ReasonSucceeded, "all good")
	require.Equal(t, [3]metav1.ConditionStatus{isTrue, isFalse, isFalse}, summary(s))
	for _, condition := range conditions {
		require.Equal(t, int64(3), condition.ObservedGeneration, "%s describes the generation read", condition.Type)
		require.NotEmpty(t, condition.Reason, "the API server refuses a condition without a reason")
	}
}

func TestConditionSetKeepsTransitionTimeWhenStatusHolds(t *testing.T) {
	var conditions []metav1.Condition
	s := newConditionSet(&conditions, 1)
	s.set(v1alpha3.ConditionRepositoryReachable, metav1.ConditionFalse, v1alpha3.ReasonUnauthorized, "refused\n")
	require.Equal(t, "refused", s.find(v1alpha3.ConditionRepositoryReachable).Message, "an error's trailing newline is trimmed")
	first := s.find(v1alpha3.ConditionRepositoryReachable).LastTransitionTime
	first.Time = first.Add(-time.Second) // earlier, so a reset would show
	s.find(v1alpha3.ConditionRepositoryReachable).LastTransitionTime = first

	newConditionSet(&conditions, 2).set(v1alpha3.ConditionRepositoryReachable, metav1.ConditionFalse, v1alpha3.ReasonForbidden, "denied")
	again := s.find(v1alpha3.ConditionRepositoryReachable)
	require.Equal(t, first, again.LastTransitionTime, "same status: no transition")
	require.Equal(t, v1alpha3.ReasonForbidden, again.Reason)
	require.Equal(t, int64(2), again.ObservedGeneration)

	s.remove(v1alpha3.ConditionRepositoryReachable)
	require.Nil(t, s.find(v1alpha3.ConditionRepositoryReachable))
}
