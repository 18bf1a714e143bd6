// Package facts is the attribution fact: the smallest record that names
// who made one persisted write, extracted from an audit event, and the
// transport seam that carries facts from the audit ingress to every watch
// that follows their type (architecture.md, "Optional attribution").
//
// A fact never carries the object: watch owns state, the fact only names
// an author. Facts travel per stream, one stream per (audit route,
// group/resource).
package facts

import "time"

// Fact is one accepted audit event, or one admission review (Source),
// reduced to what the resolver joins on and the author it names.
type Fact struct {
	// AuditID is the audit event's id, for diagnostics and dedupe.
	AuditID string
	// Stream names the route and type the fact belongs to.
	Stream StreamKey
	// Version is the API version the request used (for metrics).
	Version string
	// Verb is the request's verb: create, update, patch, delete or
	// deletecollection.
	Verb string
	// Subresource is "" or "scale" (the only one the accept gate lets in).
	Subresource string
	// Namespace and Name identify the object; a deletecollection fact has
	// no Name. An aggregated API's fact may carry only these.
	Namespace, Name string
	// UID is the object's uid, from the response object.
	UID string
	// ResourceVersion is the version the write produced: the response
	// object's, never objectRef's (an update's objectRef carries the
	// version the request was made against).
	ResourceVersion string
	// Actor is who made the request: the impersonated user when there is
	// one, else the authenticated user.
	Actor Actor
	// Stage is the event's stageTimestamp (ResponseComplete).
	Stage time.Time
	// Collection is set on a deletecollection fact: the scope it covered
	// and the objects the API server said it deleted.
	Collection *Collection
	// Source is where the fact came from: SourceAudit (post-persist, exact) or
	// SourceAdmission (a review, before the write is persisted: it counts only
	// once a watch event confirms it).
	Source string
	// PreviousVersion is, for an admission UPDATE, the oldObject's
	// resourceVersion: the version the write was made against.
	PreviousVersion string
	// Digest is, for an admission CREATE or UPDATE, sanitize.Digest of the
	// reviewed object: what the mirror would write of it.
	Digest string
}

// The fact sources. An admission fact has no ResourceVersion (the review
// precedes the write); its AuditID is the review's request uid and its
// Stage the time the review was received.
const (
	SourceAudit     = "" // zero value: every existing fact is an audit fact
	SourceAdmission = "admission"
)

// IsCandidate reports whether the fact is an admission review: a
// candidate the watch must confirm before it names anyone.
func (f Fact) IsCandidate() bool { return f.Source == SourceAdmission }

// IsRemoval reports whether the fact is about a deletion.
func (f Fact) IsRemoval() bool { return f.Verb == "delete" || f.Verb == "deletecollection" }

// Actor is an authenticated Kubernetes identity.
type Actor struct {
	// Username is the Kubernetes username; a service account's is
	// system:serviceaccount:<namespace>:<name>.
	Username string
	Groups   []string
	// DisplayName and Email come from the user.extra keys that OIDC claim
	// mapping fills (ExtraDisplayName, ExtraEmail); empty when not mapped.
	DisplayName string
	Email       string
}

// The user.extra keys an AuthenticationConfiguration maps OIDC claims into
// (architecture.md, "Wiring OIDC author claims").
const (
	ExtraDisplayName = "configbutler.ai/claims/display-name"
	ExtraEmail       = "configbutler.ai/claims/email"
)

// ServiceAccountPrefix starts every service account's username.
const ServiceAccountPrefix = "system:serviceaccount:"

// Collection is what a deletecollection covered.
type Collection struct {
	LabelSelector string
	FieldSelector string
	// UIDs are the objects the response list named; empty when the API
	// server returned none (a Status, or a list without items).
	UIDs []string
}

// StreamKey names one fact stream: an audit route and a resource type.
// The version is not part of it: one object is one stream whatever version
// a client used.
type StreamKey struct {
	Route    string
	Group    string
	Resource string
}

func (k StreamKey) String() string {
	if k.Group == "" {
		return k.Route + "/" + k.Resource
	}
	return k.Route + "/" + k.Resource + "." + k.Group
}
