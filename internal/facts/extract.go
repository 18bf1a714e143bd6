package facts

import (
	"encoding/json"
	"net/url"
	"strings"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// The verbs the accept gate lets in: the writes that can persist a change.
var mutatingVerbs = map[string]bool{
	"create": true, "update": true, "patch": true, "delete": true, "deletecollection": true,
}

// IsMutatingVerb reports whether verb is one the accept gate lets in.
func IsMutatingVerb(verb string) bool { return mutatingVerbs[verb] }

// Extract applies the accept gate to one audit event (architecture.md,
// "Optional attribution") and, when it passes, reduces it to the fact
// filed in route's stream for the event's group/resource. It returns
// OutcomeQueued with the fact when the event is accepted, else the
// rejection's outcome and a zero Fact.
//
// The gate, in the order it is checked: the ResponseComplete stage, a
// mutating verb, a 2xx response, no dryRun in the request URI, no
// subresource but scale, and, for an update or patch whose request named
// the version it was made against, a response version that differs from
// it (a no-op write answers with the version it was given). A patch
// usually names no version, and the API server's event for a no-op apply
// or patch is the event of the write before it but for its id and
// timestamps (testdata/audit/apply_noop.json), so it passes the gate with
// the version that earlier write produced: the index must keep the
// earliest-staged fact under a (uid, version), never the latest.
//
// The join keys (uid, resourceVersion, name, namespace) come from the
// response object, the version the write produced; objectRef's
// resourceVersion is the request's and is never used. objectRef fills in
// what the response lacks: the name and namespace (a /scale fact thereby
// names its parent) and, on a delete answered with a Status, the uid (or
// the Status's details.uid).
func Extract(ev *auditv1.Event, route string) (Fact, Outcome) {
	if outcome := gate(ev); outcome != OutcomeQueued {
		return Fact{}, outcome
	}
	response := decodeResponse(ev.ResponseObject)
	if unchangedVersion(ev, response) {
		return Fact{}, OutcomeUnchangedResourceVersion
	}
	ref := ev.ObjectRef
	if ref == nil || ref.Resource == "" {
		return Fact{}, OutcomeNoAttributionFact
	}
	fact := Fact{
		AuditID:     string(ev.AuditID),
		Stream:      StreamKey{Route: route, Group: ref.APIGroup, Resource: ref.Resource},
		Version:     ref.APIVersion,
		Verb:        ev.Verb,
		Subresource: ref.Subresource,
		Namespace:   ref.Namespace,
		Name:        ref.Name,
		Actor:       actorOf(ev),
		Stage:       ev.StageTimestamp.Time,
	}
	if ev.Verb == "deletecollection" {
		fact.Name = ""
		fact.Collection = collectionOf(ev.RequestURI, response)
		return fact, OutcomeQueued
	}
	fillFromResponse(&fact, ref, response)
	if fact.Name == "" && fact.UID == "" && fact.ResourceVersion == "" {
		return Fact{}, OutcomeNoAttributionFact
	}
	return fact, OutcomeQueued
}

// gate returns the first rule ev fails that needs no decoding of the
// embedded objects, or OutcomeQueued when it passes them all.
func gate(ev *auditv1.Event) Outcome {
	switch {
	case ev.Stage != auditv1.StageResponseComplete:
		return OutcomeStage
	case !IsMutatingVerb(ev.Verb):
		return OutcomeReadOnlyOrUnknownVerb
	case ev.ResponseStatus == nil || ev.ResponseStatus.Code < 200 || ev.ResponseStatus.Code > 299:
		return OutcomeFailedRequest
	case isDryRun(ev.RequestURI):
		return OutcomeDryRun
	case ev.ObjectRef != nil && ev.ObjectRef.Subresource != "" && ev.ObjectRef.Subresource != "scale":
		return OutcomeNonScaleSubresource
	}
	return OutcomeQueued
}

// query parses the query of a request URI. A query that does not parse
// cleanly still yields the parameters that did.
func query(requestURI string) url.Values {
	_, raw, _ := strings.Cut(requestURI, "?")
	values, _ := url.ParseQuery(raw)
	return values
}

// isDryRun reports whether the request asked for a dry run. The API server
// accepts only dryRun=All and refuses any other value, so any non-empty
// value on a successful request is a dry run.
func isDryRun(requestURI string) bool {
	for _, v := range query(requestURI)["dryRun"] {
		if v != "" {
			return true
		}
	}
	return false
}

// unchangedVersion reports an update or patch that produced no new
// version: the response carries the version the request named. The request
// names one in objectRef (an update's body) or, for a patch, in the patch
// body's metadata; without either there is nothing to compare.
func unchangedVersion(ev *auditv1.Event, response responseShape) bool {
	if ev.Verb != "update" && ev.Verb != "patch" {
		return false
	}
	requested := ""
	if ev.ObjectRef != nil {
		requested = ev.ObjectRef.ResourceVersion
	}
	if requested == "" {
		requested = decodeResponse(ev.RequestObject).Metadata.ResourceVersion
	}
	if requested == "" {
		return false
	}
	return response.Metadata.ResourceVersion == requested
}

// objectMeta is the part of an object's metadata a fact joins on.
type objectMeta struct {
	Name              string       `json:"name"`
	Namespace         string       `json:"namespace"`
	UID               string       `json:"uid"`
	ResourceVersion   string       `json:"resourceVersion"`
	DeletionTimestamp *metav1.Time `json:"deletionTimestamp"`
}

// responseShape is what a fact reads from a response object: an object's
// metadata, a list's items, or a Status's details.
type responseShape struct {
	Kind     string     `json:"kind"`
	Metadata objectMeta `json:"metadata"`
	Items    []struct {
		Metadata objectMeta `json:"metadata"`
	} `json:"items"`
	Details *struct {
		Name string `json:"name"`
		UID  string `json:"uid"`
	} `json:"details"`
}

func (r responseShape) isStatus() bool { return r.Kind == "Status" }

// decodeResponse reads the shape of an embedded object; anything that is
// not a JSON object (absent, a patch array, garbage) reads as empty.
func decodeResponse(obj *runtime.Unknown) responseShape {
	var shape responseShape
	if obj == nil || len(obj.Raw) == 0 {
		return shape
	}
	if json.Unmarshal(obj.Raw, &shape) != nil {
		return responseShape{}
	}
	return shape
}

// fillFromResponse sets the join keys from the response object. A Status
// (a delete that removed the object at once) carries no version; its uid
// is objectRef's when the request named one, else the Status's details.
// objectRef's uid is the request body's: the API server verified it on an
// update or delete that succeeded, but a create replaces it, so a create's
// uid comes from the response alone.
func fillFromResponse(fact *Fact, ref *auditv1.ObjectReference, response responseShape) {
	if fact.Verb != "create" {
		fact.UID = string(ref.UID)
	}
	if response.isStatus() {
		if fact.UID == "" && response.Details != nil {
			fact.UID = response.Details.UID
		}
		if fact.Name == "" && response.Details != nil {
			fact.Name = response.Details.Name
		}
		return
	}
	meta := response.Metadata
	if meta.UID != "" {
		fact.UID = meta.UID
	}
	fact.ResourceVersion = meta.ResourceVersion
	if fact.Subresource == "scale" {
		return // a Scale names its parent by objectRef's name and namespace
	}
	if meta.Name != "" {
		fact.Name = meta.Name
	}
	if meta.Namespace != "" {
		fact.Namespace = meta.Namespace
	}
}

// collectionOf is a deletecollection's scope: the request's selectors and
// the uids of the list the API server answered with (none for a Status).
func collectionOf(requestURI string, response responseShape) *Collection {
	q := query(requestURI)
	c := &Collection{LabelSelector: q.Get("labelSelector"), FieldSelector: q.Get("fieldSelector"), UIDs: []string{}}
	if response.isStatus() {
		return c
	}
	for _, item := range response.Items {
		if item.Metadata.UID != "" {
			c.UIDs = append(c.UIDs, item.Metadata.UID)
		}
	}
	return c
}

// actorOf is who made the request: the impersonated user when there is
// one, else the authenticated user.
func actorOf(ev *auditv1.Event) Actor {
	if ev.ImpersonatedUser != nil && ev.ImpersonatedUser.Username != "" {
		return ActorOf(*ev.ImpersonatedUser)
	}
	return ActorOf(ev.User)
}

// ActorOf is the actor a request's user names: the username, groups and
// the two OIDC claims of user.extra. An admission request's user is
// already the impersonated one.
func ActorOf(user authnv1.UserInfo) Actor {
	return Actor{
		Username:    user.Username,
		Groups:      append([]string(nil), user.Groups...),
		DisplayName: firstExtra(user, ExtraDisplayName),
		Email:       firstExtra(user, ExtraEmail),
	}
}

func firstExtra(user authnv1.UserInfo, key string) string {
	if values := user.Extra[key]; len(values) > 0 {
		return values[0]
	}
	return ""
}
