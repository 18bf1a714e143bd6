package admission

import (
	"context"
	"encoding/json"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/facts"
)

// Path is where the webhook is served.
const Path = "/validate-operator-types"

// Outcomes of an admission review, for admission_reviews_total{outcome}.
const (
	OutcomeRecorded  = "recorded"
	OutcomeIgnored   = "ignored"
	OutcomeMalformed = "malformed"
)

// Observer counts reviews.
type Observer interface{ Reviewed(outcome string) }

// Handler records the submitter of every CommitRequest create and allows
// every request: admission sees attempts, and denying one would make the
// operator a gate on its own types, which it is not.
type Handler struct {
	Submitters *Submitters
	Observer   Observer
}

var _ admission.Handler = (*Handler)(nil)

var commitRequestKind = v1alpha3.GroupVersion.WithKind("CommitRequest").GroupKind()

// Handle records and allows.
func (h *Handler) Handle(_ context.Context, req admission.Request) admission.Response {
	h.observe(h.record(req))
	return admission.Allowed("")
}

func (h *Handler) record(req admission.Request) string {
	if req.Kind.Group != commitRequestKind.Group || req.Kind.Kind != commitRequestKind.Kind || req.Operation != admissionv1.Create {
		return OutcomeIgnored
	}
	uid, ok := objectUID(req.Object.Raw)
	if !ok {
		return OutcomeMalformed
	}
	h.Submitters.Record(uid, facts.ActorOf(req.UserInfo))
	return OutcomeRecorded
}

// objectUID reads metadata.uid, which the API server assigns before
// validating admission.
func objectUID(raw []byte) (types.UID, bool) {
	var obj struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil || obj.Metadata.UID == "" {
		return "", false
	}
	return obj.Metadata.UID, true
}

func (h *Handler) observe(outcome string) {
	if h.Observer != nil {
		h.Observer.Reviewed(outcome)
	}
}
