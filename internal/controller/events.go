package controller

import (
	"fmt"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/redact"
)

// +kubebuilder:rbac:groups="";events.k8s.io,resources=events,verbs=create;patch

// transitionAction is the Event action of a summary transition.
const transitionAction = "Reconcile"

// maxEventNote is the most the events.k8s.io API accepts in a note (1 kB).
const maxEventNote = 1024

// summaryState is what an Event about an object's summary reports: Ready's
// status and reason, and which of Stalled and Reconciling is True.
type summaryState struct {
	ready, reason, message string
	stalled, reconciling   bool
}

func summaryOf(conds []metav1.Condition) summaryState {
	var s summaryState
	if c := meta.FindStatusCondition(conds, v1alpha3.ConditionReady); c != nil {
		s.ready, s.reason, s.message = string(c.Status), c.Reason, c.Message
	}
	s.stalled = meta.IsStatusConditionTrue(conds, v1alpha3.ConditionStalled)
	s.reconciling = meta.IsStatusConditionTrue(conds, v1alpha3.ConditionReconciling)
	return s
}

// announceTransition records an Event on obj when its summary changed
// between the status it read (before) and the one it wrote (after): Ready's
// status or reason, or whether it is Stalled. kubectl describe then tells
// when a provider or target failed and recovered, not only how it is now.
// Callers announce only a status the API server accepted, so a retried
// write does not announce twice. Nothing happens without a recorder.
func announceTransition(recorder events.EventRecorder, obj runtime.Object, before, after []metav1.Condition) {
	if recorder == nil {
		return
	}
	was, now := summaryOf(before), summaryOf(after)
	if now.ready == "" || (was.ready == now.ready && was.reason == now.reason && was.stalled == now.stalled) {
		return
	}
	recorder.Eventf(obj, nil, now.eventType(), now.reason, transitionAction, "%s", eventNote(now.describe()))
}

// eventType is Normal for Ready, suspension and work expected to finish on
// its own, Warning for a failure.
func (s summaryState) eventType() string {
	switch {
	case s.ready == string(metav1.ConditionTrue):
		return corev1.EventTypeNormal
	case s.stalled:
		return corev1.EventTypeWarning
	case s.reason == v1alpha3.ReasonSuspended, s.reason == v1alpha3.ReasonProgressing, s.reason == v1alpha3.ReasonInitialReplay,
		s.reason == v1alpha3.ReasonFinalizing:
		return corev1.EventTypeNormal
	}
	return corev1.EventTypeWarning
}

// describe says which summary the object entered, then Ready's message.
func (s summaryState) describe() string {
	state := "Not ready"
	switch {
	case s.ready == string(metav1.ConditionTrue):
		state = "Ready"
	case s.stalled:
		state = "Stalled"
	case s.reconciling:
		state = "Reconciling"
	case s.reason == v1alpha3.ReasonSuspended:
		state = "Suspended"
	}
	if s.message == "" {
		return state
	}
	return fmt.Sprintf("%s: %s", state, s.message)
}

// eventNote makes a condition message fit an Event: a URL's password is
// replaced as url.URL.Redacted does (messages are meant to carry none;
// Events are read by more people than status, so this is checked again),
// and the note is cut to what the API accepts.
func eventNote(message string) string {
	note := redact.URLsIn(message)
	if len(note) <= maxEventNote {
		return note
	}
	cut := maxEventNote - len("…")
	for cut > 0 && !utf8.RuneStart(note[cut]) {
		cut--
	}
	return note[:cut] + "…"
}
