// Package observer is the admission observer: a validating webhook,
// registered for the mirrored types only, that always allows and turns each
// review into an attribution fact (facts.Fact with Source
// facts.SourceAdmission). It publishes the facts through the same
// facts.Transport the audit ingress uses, so one index and one resolver
// serve both sources (architecture.md, "Optional attribution").
//
// A review happens before the write is persisted: it has no resulting
// resourceVersion and the write may still fail. The fact therefore carries
// what the write was made against (PreviousVersion) and what it would
// write (Digest); the join side counts it only once a watch event confirms
// it.
package observer

import (
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/configbutler/gitops-reverser/internal/facts"
	"github.com/configbutler/gitops-reverser/internal/sanitize"
)

// Outcome is what the observer did with one review: the outcome label of
// gitopsreverser_admission_observer_reviews_total.
type Outcome string

const (
	// OutcomeQueued: a fact was published.
	OutcomeQueued Outcome = "queued"
	// OutcomeDryRun: the request was a dry run; nothing will persist.
	OutcomeDryRun Outcome = "dry_run"
	// OutcomeIgnoredOperation: not CREATE, UPDATE or DELETE (CONNECT).
	OutcomeIgnoredOperation Outcome = "ignored_operation"
	// OutcomeNonScaleSubresource: a subresource other than scale (only
	// registered by hand: the observer registers /scale only).
	OutcomeNonScaleSubresource Outcome = "non_scale_subresource"
	// OutcomeNoAttributionFact: the review names no object a watch event
	// could join on (no uid, or no name).
	OutcomeNoAttributionFact Outcome = "no_attribution_fact"
	// OutcomeMalformed: the body is not an admission.k8s.io/v1
	// AdmissionReview with a request; answered 400.
	OutcomeMalformed Outcome = "malformed"
	// OutcomeWriteError: the fact was built but publishing it failed. The
	// write is still allowed.
	OutcomeWriteError Outcome = "write_error"
)

// Outcomes lists every outcome, for zero series.
func Outcomes() []Outcome {
	return []Outcome{OutcomeQueued, OutcomeDryRun, OutcomeIgnoredOperation, OutcomeNonScaleSubresource,
		OutcomeNoAttributionFact, OutcomeMalformed, OutcomeWriteError}
}

// verbs are the fact verbs of the reviewed operations.
var verbs = map[admissionv1.Operation]string{
	admissionv1.Create: "create",
	admissionv1.Update: "update",
	admissionv1.Delete: "delete",
}

// FactOf reduces one review, received at received, to the fact it names
// (sensitive: of a type written only encrypted, whose fact then carries no
// digest: a digest of a Secret's plaintext in the fact store would let
// anyone who reads the store test guesses of a short value offline; such
// a review is confirmed by uid and version alone);
// the fact's Stream has no Route yet (the handler files it under each
// route of the local source). It returns OutcomeQueued with the fact, or
// the reason there is none.
//
// What the API server sends (verified on a real one, see the e2e tests):
// patch, PUT and /scale arrive as UPDATE with oldObject at the version the
// write was made against; CREATE carries the final uid and name (also for
// generateName) but no resourceVersion; DELETE carries a null object and
// the full oldObject; a deletecollection is one DELETE review per object.
func FactOf(req *admissionv1.AdmissionRequest, received time.Time, sensitive bool) (facts.Fact, Outcome) {
	verb, ok := verbs[req.Operation]
	switch {
	case !ok:
		return facts.Fact{}, OutcomeIgnoredOperation
	case req.DryRun != nil && *req.DryRun:
		return facts.Fact{}, OutcomeDryRun
	case req.SubResource != "" && req.SubResource != "scale":
		return facts.Fact{}, OutcomeNonScaleSubresource
	}
	object, objectOK := decodeObject(req.Object)
	old, oldOK := decodeObject(req.OldObject)
	if (verb != "delete" && !objectOK) || (verb != "create" && !oldOK) {
		return facts.Fact{}, OutcomeNoAttributionFact
	}
	fact := facts.Fact{
		AuditID:     string(req.UID),
		Stream:      facts.StreamKey{Group: req.Resource.Group, Resource: req.Resource.Resource},
		Version:     req.Resource.Version,
		Verb:        verb,
		Subresource: req.SubResource,
		Namespace:   req.Namespace,
		Name:        req.Name,
		Actor:       facts.ActorOf(req.UserInfo),
		Stage:       received,
		Source:      facts.SourceAdmission,
	}
	// The object names itself; a create with generateName has its final
	// name there, and req.Name may be empty. A Scale carries its parent's
	// name, uid and version.
	named := object
	if verb == "delete" {
		named = old
	}
	if fact.Name == "" {
		fact.Name = named.GetName()
	}
	fact.UID = string(named.GetUID())
	if verb == "update" {
		fact.PreviousVersion = old.GetResourceVersion()
	}
	if verb != "delete" && fact.Subresource == "" && !sensitive {
		fact.Digest = sanitize.Digest(object)
	}
	if fact.UID == "" || fact.Name == "" {
		return facts.Fact{}, OutcomeNoAttributionFact
	}
	return fact, OutcomeQueued
}

// decodeObject reads an embedded object; absent, null or not a JSON object
// reads as not ok. Numbers decode as a watch's objects do (int64 where
// integral), so the digest of the reviewed object equals the digest of the
// same object seen by the watch.
func decodeObject(raw runtime.RawExtension) (*unstructured.Unstructured, bool) {
	if len(raw.Raw) == 0 {
		return nil, false
	}
	var content map[string]interface{}
	if err := utiljson.Unmarshal(raw.Raw, &content); err != nil || content == nil {
		return nil, false
	}
	return &unstructured.Unstructured{Object: content}, true
}
