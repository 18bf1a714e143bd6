package controller

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
)

// conditionSet writes one object's status conditions during one reconcile.
// Every condition it sets carries the generation the reconcile read, so a
// reader can tell a condition about the current spec from a stale one.
//
// The kstatus summary (Ready, Reconciling, Stalled) is always written as a
// consistent triple by markReady, markStalled and markReconciling, so no
// reconciler can leave Ready=False with neither Reconciling nor Stalled
// explaining whether to wait or to act; markSuspended is the one exception,
// with its own reason saying why.
type conditionSet struct {
	conditions *[]metav1.Condition
	generation int64
}

// newConditionSet writes into conditions (a status's Conditions field) on
// behalf of an object at generation.
func newConditionSet(conditions *[]metav1.Condition, generation int64) conditionSet {
	return conditionSet{conditions: conditions, generation: generation}
}

// set adds or updates a condition. meta.SetStatusCondition keeps the
// LastTransitionTime when the status does not change, so re-setting the
// same condition on every reconcile does not churn the object. The message
// is trimmed: wrapped errors often end in a newline, which kubectl would
// print as a blank line.
func (s conditionSet) set(conditionType string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(s.conditions, metav1.Condition{
		Type:               conditionType,
		Status:             status,
		Reason:             reason,
		Message:            strings.TrimSpace(message),
		ObservedGeneration: s.generation,
	})
}

// remove drops a condition that no longer applies (a feature the spec
// turned off).
func (s conditionSet) remove(conditionType string) {
	meta.RemoveStatusCondition(s.conditions, conditionType)
}

// find returns the condition of that type, nil when it is not set.
func (s conditionSet) find(conditionType string) *metav1.Condition {
	return meta.FindStatusCondition(*s.conditions, conditionType)
}

// markReady: the spec is fully in effect. Ready=True, Stalled=False,
// Reconciling=False.
func (s conditionSet) markReady(reason, message string) {
	s.set(v1alpha3.ConditionReady, metav1.ConditionTrue, reason, message)
	s.set(v1alpha3.ConditionStalled, metav1.ConditionFalse, reason, "")
	s.set(v1alpha3.ConditionReconciling, metav1.ConditionFalse, reason, "")
}

// markStalled: progress needs a human (a spec, a Secret or the remote must
// change). Ready=False, Stalled=True, Reconciling=False; the message says
// what to fix and is repeated on Ready, which is what users read first.
func (s conditionSet) markStalled(reason, message string) {
	s.set(v1alpha3.ConditionReady, metav1.ConditionFalse, reason, message)
	s.set(v1alpha3.ConditionStalled, metav1.ConditionTrue, reason, message)
	s.set(v1alpha3.ConditionReconciling, metav1.ConditionFalse, reason, "")
}

// markReconciling: not ready yet, and expected to become ready without a
// human (a transient failure being retried, work under way). Ready=False,
// Reconciling=True, Stalled=False.
func (s conditionSet) markReconciling(reason, message string) {
	s.set(v1alpha3.ConditionReady, metav1.ConditionFalse, reason, message)
	s.set(v1alpha3.ConditionReconciling, metav1.ConditionTrue, reason, message)
	s.set(v1alpha3.ConditionStalled, metav1.ConditionFalse, reason, "")
}

// markSuspended: a user suspended the object (spec.suspend). Ready=False
// with reason Suspended; Reconciling and Stalled are False, the one
// exception to "one of them is True": nothing is in progress and no fix is
// needed, the operator waits for the user's resume.
func (s conditionSet) markSuspended(message string) {
	s.set(v1alpha3.ConditionReady, metav1.ConditionFalse, v1alpha3.ReasonSuspended, message)
	s.set(v1alpha3.ConditionReconciling, metav1.ConditionFalse, v1alpha3.ReasonSuspended, "")
	s.set(v1alpha3.ConditionStalled, metav1.ConditionFalse, v1alpha3.ReasonSuspended, "")
}
