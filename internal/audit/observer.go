package audit

import (
	"time"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/configbutler/gitops-reverser/internal/facts"
)

// Observer counts what the handler did. internal/metrics implements it.
type Observer interface {
	// Event reports one event's terminal outcome; every event of a read
	// EventList is reported exactly once.
	Event(labels EventLabels, outcome facts.Outcome)
	// Unrouted reports an event on the shared endpoint that passed the gate
	// but names no usable route; it is also reported to Event as
	// facts.OutcomeNoAttributionFact.
	Unrouted(reason UnroutedReason)
	// EventList reports one request: its outcome, how many events it
	// carried (0 when it could not be read) and how long it took.
	EventList(outcome ListOutcome, events int, took time.Duration)
	// FactDelay reports, for each accepted event, how long after its stage
	// time it reached the ingress: the API server's batching (its
	// --audit-webhook-batch-max-wait) is most of it, and a delay beyond
	// the attribution grace means the fact comes too late to name anybody.
	FactDelay(delay time.Duration)
}

// EventLabels name an event's type and verb for the metrics.
type EventLabels struct {
	Group, Version, Resource string
	// Verb is one of Verbs, or "other".
	Verb string
}

// Verbs are the verbs that keep their own label value; any other is
// counted as "other", so a sender cannot grow the label set.
func Verbs() []string {
	return []string{"create", "update", "patch", "delete", "deletecollection", "get", "list", "watch"}
}

var labeledVerbs = func() map[string]bool {
	verbs := map[string]bool{}
	for _, verb := range Verbs() {
		verbs[verb] = true
	}
	return verbs
}()

func labelsOf(ev *auditv1.Event) EventLabels {
	var labels EventLabels
	if ref := ev.ObjectRef; ref != nil {
		labels = EventLabels{Group: ref.APIGroup, Version: ref.APIVersion, Resource: ref.Resource}
	}
	labels.Verb = "other"
	if labeledVerbs[ev.Verb] {
		labels.Verb = ev.Verb
	}
	return labels
}

// ListOutcome is the outcome of one request to the ingress (the outcome
// label of the audit_eventlists families).
type ListOutcome string

const (
	// ListOK: read, its facts published; answered 200.
	ListOK ListOutcome = "ok"
	// ListWriteError: read, but a publish failed; answered 503 so the API
	// server retries.
	ListWriteError ListOutcome = "write_error"
	// ListMalformed: not JSON, or not an audit.k8s.io/v1 EventList; 400.
	ListMalformed ListOutcome = "malformed"
	// ListTooLarge: a body over the size bound; 413.
	ListTooLarge ListOutcome = "too_large"
	// ListUnknownRoute: a well-formed route no ClusterProvider has; 404.
	ListUnknownRoute ListOutcome = "unknown_route"
	// ListNotFound: a path the ingress does not serve (including the bare
	// endpoint when annotation routing is off); 404.
	ListNotFound ListOutcome = "not_found"
	// ListMethodNotAllowed: not a POST; 405.
	ListMethodNotAllowed ListOutcome = "method_not_allowed"
)

// ListOutcomes lists every ListOutcome, for zero series.
func ListOutcomes() []ListOutcome {
	return []ListOutcome{ListOK, ListWriteError, ListMalformed, ListTooLarge, ListUnknownRoute, ListNotFound, ListMethodNotAllowed}
}

// UnroutedReason says why an event on the shared endpoint had no route.
type UnroutedReason string

const (
	// UnroutedMissingRoute: the annotation is absent or not a DNS label.
	UnroutedMissingRoute UnroutedReason = "missing_route"
	// UnroutedUnknownRoute: no ClusterProvider has the route it names.
	UnroutedUnknownRoute UnroutedReason = "unknown_route"
)

// UnroutedReasons lists every UnroutedReason, for zero series.
func UnroutedReasons() []UnroutedReason {
	return []UnroutedReason{UnroutedMissingRoute, UnroutedUnknownRoute}
}

type nopObserver struct{}

func (nopObserver) Event(EventLabels, facts.Outcome)          {}
func (nopObserver) Unrouted(UnroutedReason)                   {}
func (nopObserver) EventList(ListOutcome, int, time.Duration) {}
func (nopObserver) FactDelay(time.Duration)                   {}
