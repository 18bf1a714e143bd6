// Package audit is the audit ingress: the HTTPS endpoint the API server's
// audit webhook backend posts EventList batches to. It applies the accept
// gate (facts.Extract), publishes the accepted facts per stream through a
// facts.Transport and answers at once: it never waits on the watch side
// (architecture.md, "Optional attribution").
//
// The API server's webhook backend retries any error with backoff and then
// drops the batch, and batches can arrive out of order; so the handler
// answers 200 for everything it could read, even when every event was
// rejected, and an error only when a retry could help (a failed publish).
package audit

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/configbutler/gitops-reverser/internal/facts"
)

// PathPrefix is the ingress path: POST PathPrefix+"/<route>", or the bare
// PathPrefix when events name their route in an annotation.
const PathPrefix = "/audit-webhook"

// DefaultMaxBodyBytes bounds an EventList body when HandlerOptions leaves
// it zero. The API server's default batch (400 events at RequestResponse
// level, without managed fields) stays well below it.
const DefaultMaxBodyBytes int64 = 32 << 20

// HandlerOptions configures a Handler.
type HandlerOptions struct {
	// Transport receives the accepted facts, one Publish per stream per
	// request. Required.
	Transport facts.Transport
	// KnownRoute reports whether some ClusterProvider carries route (its
	// spec.attribution.auditRoute, or its name). Required. A request for
	// an unknown route is answered 404; on the shared endpoint an event
	// naming one is dropped.
	KnownRoute func(route string) bool
	// RouteAnnotationKey, when set, enables the shared PathPrefix endpoint:
	// each event names its route in annotations[RouteAnnotationKey].
	RouteAnnotationKey string
	// MaxBodyBytes bounds the body; a larger one is answered 413. Zero means
	// DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Observer counts outcomes; nil counts nothing.
	Observer Observer
	// Now is the clock for the request duration; nil means time.Now.
	Now func() time.Time
}

// Handler serves PathPrefix. Build it with NewHandler.
type Handler struct {
	opts HandlerOptions
}

// NewHandler checks opts and fills in their defaults.
func NewHandler(opts HandlerOptions) (*Handler, error) {
	if opts.Transport == nil {
		return nil, errors.New("the audit handler needs a fact transport")
	}
	if opts.KnownRoute == nil {
		return nil, errors.New("the audit handler needs a KnownRoute function")
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.Observer == nil {
		opts.Observer = nopObserver{}
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Handler{opts: opts}, nil
}

// ServeHTTP answers one EventList post and counts it: the request in
// Observer.EventList, every event it carried in Observer.Event.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := h.opts.Now()
	outcome, events := h.serve(w, r)
	h.opts.Observer.EventList(outcome, events, h.opts.Now().Sub(start))
}

// serve answers the request and returns its outcome and how many events
// it carried.
func (h *Handler) serve(w http.ResponseWriter, r *http.Request) (ListOutcome, int) {
	route, shared, ok := parsePath(r.URL.Path)
	if !ok || (shared && h.opts.RouteAnnotationKey == "") {
		http.NotFound(w, r)
		return ListNotFound, 0
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "only POST is served", http.StatusMethodNotAllowed)
		return ListMethodNotAllowed, 0
	}
	if !shared && !h.opts.KnownRoute(route) {
		http.Error(w, fmt.Sprintf("no ClusterProvider has the audit route %q", route), http.StatusNotFound)
		return ListUnknownRoute, 0
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.opts.MaxBodyBytes))
	if err != nil {
		if tooLarge := (*http.MaxBytesError)(nil); errors.As(err, &tooLarge) {
			http.Error(w, fmt.Sprintf("the EventList is larger than %d bytes", tooLarge.Limit), http.StatusRequestEntityTooLarge)
			return ListTooLarge, 0
		}
		http.Error(w, "reading the body: "+err.Error(), http.StatusBadRequest)
		return ListMalformed, 0
	}
	events, err := facts.DecodeEventList(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return ListMalformed, 0
	}
	batches := h.extract(events, route, shared)
	if !h.publish(r, batches) {
		http.Error(w, "publishing the facts failed; retry", http.StatusServiceUnavailable)
		return ListWriteError, len(events)
	}
	w.WriteHeader(http.StatusOK)
	return ListOK, len(events)
}

// parsePath splits PathPrefix/<route>; shared is the bare PathPrefix. A
// route must be a DNS label, as ClusterProvider names and auditRoutes are.
func parsePath(path string) (route string, shared, ok bool) {
	if path == PathPrefix {
		return "", true, true
	}
	route, found := strings.CutPrefix(path, PathPrefix+"/")
	if !found || len(validation.IsDNS1123Label(route)) > 0 {
		return "", false, false
	}
	return route, false, true
}

// streamBatch is what one Publish carries: the facts of one stream and the
// labels of the events they came from, in event order.
type streamBatch struct {
	stream facts.StreamKey
	facts  []facts.Fact
	labels []EventLabels
}

// extract runs every event through the gate, counts the rejected ones and
// groups the accepted ones per stream, in the order streams first appear.
func (h *Handler) extract(events []auditv1.Event, route string, shared bool) []*streamBatch {
	var batches []*streamBatch
	byStream := map[facts.StreamKey]*streamBatch{}
	for i := range events {
		ev := &events[i]
		labels := labelsOf(ev)
		fact, outcome := facts.Extract(ev, route)
		if outcome == facts.OutcomeQueued && shared {
			fact.Stream.Route, outcome = h.routeOf(ev)
		}
		if outcome != facts.OutcomeQueued {
			h.opts.Observer.Event(labels, outcome)
			continue
		}
		if !fact.Stage.IsZero() {
			h.opts.Observer.FactDelay(h.opts.Now().Sub(fact.Stage))
		}
		batch := byStream[fact.Stream]
		if batch == nil {
			batch = &streamBatch{stream: fact.Stream}
			byStream[fact.Stream] = batch
			batches = append(batches, batch)
		}
		batch.facts = append(batch.facts, fact)
		batch.labels = append(batch.labels, labels)
	}
	return batches
}

// routeOf is the route an event on the shared endpoint names; an event
// that names none, or one no ClusterProvider has, yields no fact.
func (h *Handler) routeOf(ev *auditv1.Event) (string, facts.Outcome) {
	route := ev.Annotations[h.opts.RouteAnnotationKey]
	switch {
	case route == "" || len(validation.IsDNS1123Label(route)) > 0:
		h.opts.Observer.Unrouted(UnroutedMissingRoute)
	case !h.opts.KnownRoute(route):
		h.opts.Observer.Unrouted(UnroutedUnknownRoute)
	default:
		return route, facts.OutcomeQueued
	}
	return "", facts.OutcomeNoAttributionFact
}

// publish appends each batch to its stream and counts its events; it
// reports whether every publish succeeded. A failed stream does not stop
// the others: their facts are good, and a retried batch re-publishes them
// under the same audit ids.
func (h *Handler) publish(r *http.Request, batches []*streamBatch) bool {
	ok := true
	for _, batch := range batches {
		outcome := facts.OutcomeQueued
		if err := h.opts.Transport.Publish(r.Context(), batch.stream, batch.facts); err != nil {
			outcome, ok = facts.OutcomeWriteError, false
		}
		for _, labels := range batch.labels {
			h.opts.Observer.Event(labels, outcome)
		}
	}
	return ok
}
