package observer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/configbutler/gitops-reverser/internal/facts"
)

// Path is where the observer webhook is served, beside
// /validate-operator-types on the same server.
const Path = "/observe-mirrored-types"

// MaxBodyBytes bounds one review: two objects of at most 3 MB each and the
// rest (controller-runtime's bound for admission requests).
const MaxBodyBytes int64 = 7 << 20

// Observer counts reviews. internal/metrics implements it.
type Observer interface {
	// Reviewed reports one review's outcome; operation is CREATE, UPDATE,
	// DELETE, or "" when the body could not be read.
	Reviewed(operation string, outcome Outcome)
}

// Handler serves Path. Build it with NewHandler.
type Handler struct {
	opts HandlerOptions
}

// HandlerOptions configure a Handler.
type HandlerOptions struct {
	// Transport receives the facts: the one the audit ingress publishes
	// to. Required.
	Transport facts.Transport
	// Routes are the streams' routes of the sources a review belongs to:
	// the audit routes of the ClusterProviders that read the operator's own
	// cluster, whose API server calls this webhook. A fact is published to
	// each. Required.
	Routes func(ctx context.Context) ([]string, error)
	// Observer counts reviews; nil counts nothing.
	Observer Observer
	// Now is the clock of Fact.Stage; nil means time.Now.
	Now func() time.Time
	// Local, when set, files each fact in this process's own fact index at
	// once, besides publishing it, before the review is answered: the API
	// server stores a write only after its webhooks answered, so the watch
	// event of a write reviewed here never finds the index without its
	// review, however long the transport takes (the index drops the copy
	// the transport delivers later).
	Local func(facts.StreamKey, []facts.Fact)
	// Sensitive reports the types written only encrypted (discovery's
	// policy): their facts carry no digest (FactOf). Nil is core Secrets.
	Sensitive func(schema.GroupResource) bool
}

// NewHandler checks opts and fills in their defaults.
func NewHandler(opts HandlerOptions) (*Handler, error) {
	if opts.Transport == nil {
		return nil, errors.New("the admission observer needs a fact transport")
	}
	if opts.Routes == nil {
		return nil, errors.New("the admission observer needs the routes of the local source")
	}
	if opts.Observer == nil {
		opts.Observer = nopObserver{}
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Sensitive == nil {
		opts.Sensitive = func(gr schema.GroupResource) bool { return gr == schema.GroupResource{Resource: "secrets"} }
	}
	return &Handler{opts: opts}, nil
}

// ServeHTTP answers one AdmissionReview. Every review it can read is
// allowed, whatever became of its fact: the observer watches writes, it
// never gates them. A body that is not a review is answered 400: there is
// no request uid to answer with.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	received := h.opts.Now()
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "only POST is served", http.StatusMethodNotAllowed)
		h.opts.Observer.Reviewed("", OutcomeMalformed)
		return
	}
	review, err := decodeReview(w, r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		h.opts.Observer.Reviewed("", OutcomeMalformed)
		return
	}
	req := review.Request
	outcome := h.record(r.Context(), req, received)
	h.opts.Observer.Reviewed(string(req.Operation), outcome)
	writeAllowed(w, review)
}

// decodeReview reads an admission.k8s.io/v1 AdmissionReview that carries a
// request.
func decodeReview(w http.ResponseWriter, r *http.Request) (*admissionv1.AdmissionReview, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		return nil, fmt.Errorf("reading the AdmissionReview: %w", err)
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil {
		return nil, fmt.Errorf("decoding the AdmissionReview: %w", err)
	}
	switch {
	case review.APIVersion != admissionv1.SchemeGroupVersion.String() || review.Kind != "AdmissionReview":
		return nil, fmt.Errorf("want an %s AdmissionReview, got %q %q", admissionv1.SchemeGroupVersion, review.APIVersion, review.Kind)
	case review.Request == nil || review.Request.UID == "":
		return nil, errors.New("the AdmissionReview carries no request, or a request without a uid")
	}
	return &review, nil
}

// record publishes the review's fact to the stream of each route.
func (h *Handler) record(ctx context.Context, req *admissionv1.AdmissionRequest, received time.Time) Outcome {
	fact, outcome := FactOf(req, received, h.opts.Sensitive(schema.GroupResource{Group: req.Resource.Group, Resource: req.Resource.Resource}))
	if outcome != OutcomeQueued {
		return outcome
	}
	routes, err := h.opts.Routes(ctx)
	if err != nil {
		return OutcomeWriteError
	}
	if len(routes) == 0 {
		return OutcomeNoAttributionFact
	}
	for _, route := range routes {
		routed := fact
		routed.Stream.Route = route
		if h.opts.Local != nil {
			h.opts.Local(routed.Stream, []facts.Fact{routed})
		}
		if err := h.opts.Transport.Publish(ctx, routed.Stream, []facts.Fact{routed}); err != nil {
			outcome = OutcomeWriteError
		}
	}
	return outcome
}

// writeAllowed answers the review: allowed, under its request's uid.
func writeAllowed(w http.ResponseWriter, review *admissionv1.AdmissionReview) {
	answer := admissionv1.AdmissionReview{
		TypeMeta: review.TypeMeta,
		Response: &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true},
	}
	body, err := json.Marshal(answer)
	if err != nil {
		panic(fmt.Sprintf("encoding an AdmissionReview answer: %v", err)) // a fixed shape: cannot fail
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body) // the API server went away; it will not retry
}

type nopObserver struct{}

func (nopObserver) Reviewed(string, Outcome) {}
