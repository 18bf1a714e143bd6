package controller

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/engine"
)

const (
	// refusedListed bounds status.refused.objects.
	refusedListed = 10
	// refusedInMessage bounds the objects the condition message names.
	refusedInMessage = 3
	// refusalEventsPerReconcile bounds the Events one reconcile emits; the
	// rest are counted in one more.
	refusalEventsPerReconcile = 10
)

// refusalHints say what a human does about each refusal reason.
var refusalHints = map[string]string{
	v1alpha3.ReasonEncryptionRequired: "sensitive objects are only written encrypted; make encryption usable " +
		"(EncryptionConfigured says what is missing) or leave them out of the rules",
	v1alpha3.ReasonAuxiliaryPath: "spec.placement names a file reserved for kustomization.yaml or README.md; " +
		"give the type a template whose file name holds {name}, or another path",
	v1alpha3.ReasonEncryptionFailed: "encrypting it failed (the message says how); check spec.encryption's recipients " +
		"and key Secret (EncryptionConfigured); a change of them replays the target and writes it",
	v1alpha3.ReasonInvalidPlacement:         "fix spec.placement",
	v1alpha3.ReasonSensitiveShared:          "in Git, move the other documents out of the file the object would share",
	v1alpha3.ReasonPlaintextBesideEncrypted: "in Git, move the encrypted documents out of the file the object would share",
}

// refusalHint says what to do; reasons without a hint are the operator's
// own failures to render an object, worth a bug report.
func refusalHint(reason string) string {
	if h, ok := refusalHints[reason]; ok {
		return h
	}
	return "the operator could not render the object safely; leave it out of the rules and report it"
}

// reportRefusals sets ObjectsWritten (True; False/<refusal reason>, or
// False/ObjectsRefused for several reasons: Stalled, since every refusal
// lasts until a human changes the spec, the rules or the repository) and
// status.refused, and emits a Warning Event for each newly refused object.
func (r *GitTargetReconciler) reportRefusals(run *targetRun, refused []engine.Refusal) {
	t := run.target
	if len(refused) == 0 {
		t.Status.Refused = nil
		run.conds.setBool(v1alpha3.ConditionObjectsWritten, true, v1alpha3.ReasonSucceeded, "every selected object is written")
	} else {
		t.Status.Refused = refusedSummary(refused)
		run.conds.block(v1alpha3.ConditionObjectsWritten, refusalReason(refused), refusalMessage(refused))
	}
	if r.Events == nil {
		return
	}
	fresh := r.Engine.UnannouncedRefusals(keyOf(t))
	for i, f := range fresh {
		if i == refusalEventsPerReconcile {
			r.Events.Eventf(t, nil, corev1.EventTypeWarning, v1alpha3.ReasonObjectsRefused, "Refuse",
				"%d more objects are not written; status.refused lists the first", len(fresh)-i)
			break
		}
		r.Events.Eventf(t, nil, corev1.EventTypeWarning, f.Reason, "Refuse", "not writing %s: %s", describeRefusal(f), refusalHint(f.Reason))
	}
}

func refusedSummary(refused []engine.Refusal) *v1alpha3.RefusedSummary {
	s := &v1alpha3.RefusedSummary{Count: int32(len(refused))}
	for _, f := range refused[:min(len(refused), refusedListed)] {
		s.Objects = append(s.Objects, v1alpha3.RefusedObject{APIVersion: f.Object.APIVersion(), Kind: f.Object.Kind,
			Namespace: f.Object.Namespace, Name: f.Object.Name, Reason: f.Reason})
	}
	return s
}

// refusalReason is the one reason all refusals share, or ObjectsRefused.
func refusalReason(refused []engine.Refusal) string {
	for _, f := range refused[1:] {
		if f.Reason != refused[0].Reason {
			return v1alpha3.ReasonObjectsRefused
		}
	}
	return refused[0].Reason
}

// refusalMessage counts the refused objects and names the first few with
// what to do about each.
func refusalMessage(refused []engine.Refusal) string {
	parts := make([]string, 0, refusedInMessage+1)
	for _, f := range refused[:min(len(refused), refusedInMessage)] {
		parts = append(parts, describeRefusal(f)+": "+refusalHint(f.Reason))
	}
	if more := len(refused) - refusedInMessage; more > 0 {
		parts = append(parts, fmt.Sprintf("and %d more (status.refused lists the first %d)", more, refusedListed))
	}
	noun := "objects are"
	if len(refused) == 1 {
		noun = "object is"
	}
	return fmt.Sprintf("%d selected %s not written: %s", len(refused), noun, strings.Join(parts, "; "))
}

// describeRefusal names the object and the reason, with the planner's
// detail when it has one.
func describeRefusal(f engine.Refusal) string {
	name := f.Object.Name
	if f.Object.Namespace != "" {
		name = f.Object.Namespace + "/" + name
	}
	s := fmt.Sprintf("%s %s (%s", f.Object.Kind, name, f.Reason)
	if f.Detail != "" {
		s += ", " + f.Detail
	}
	return s + ")"
}
