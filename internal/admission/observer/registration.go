package observer

import (
	"cmp"
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/rules"
)

// The names of the observer's two webhooks. Namespaced types are reviewed
// in the claimed namespaces only; cluster-scoped ones by a webhook of their
// own, without a namespace selector: for a Namespace object the selector
// would be matched against the Namespace's own labels, and a Namespace not
// in the list would go unreviewed.
const (
	WebhookNamespaced = "namespaced.observer.gitops-reverser.configbutler.ai"
	WebhookCluster    = "cluster.observer.gitops-reverser.configbutler.ai"
)

// DefaultTimeoutSeconds bounds a review: the API server waits this long
// at most for the observer before it lets the write through (failurePolicy
// Ignore).
const DefaultTimeoutSeconds int32 = 2

// namespaceNameLabel is the label the API server sets on every Namespace
// to its name.
const namespaceNameLabel = "kubernetes.io/metadata.name"

// WebhookSpec is what the webhooks are built from besides the claims.
type WebhookSpec struct {
	// ClientConfig reaches the observer: a Service (port 443) in cluster, or
	// a URL. Its path is set to Path for a Service; a URL must end in it.
	ClientConfig admissionregistrationv1.WebhookClientConfig
	// TimeoutSeconds of each review; DefaultTimeoutSeconds when zero.
	TimeoutSeconds int32
	// Scalable reports the resources that serve a /scale subresource.
	Scalable func(schema.GroupVersionResource) bool
}

// Webhooks are the observer's webhooks for claims: one rule per claimed
// type with the operations its targets follow, plus UPDATE of its /scale
// where it has one and UPDATE is followed. Empty when nothing is claimed.
// The result is deterministic, so an unchanged set compares equal.
func Webhooks(claims []rules.Claim, spec WebhookSpec) []admissionregistrationv1.ValidatingWebhook {
	var namespaced, cluster []admissionregistrationv1.RuleWithOperations
	var namespaces []string
	for _, c := range perType(claims) {
		if c.Namespace != "" {
			namespaced = append(namespaced, rulesFor(c, admissionregistrationv1.NamespacedScope, spec.Scalable != nil && spec.Scalable(c.GVR))...)
		} else {
			cluster = append(cluster, rulesFor(c, admissionregistrationv1.ClusterScope, spec.Scalable != nil && spec.Scalable(c.GVR))...)
		}
	}
	for _, c := range claims {
		if c.Namespace != "" {
			namespaces = append(namespaces, c.Namespace)
		}
	}
	slices.Sort(namespaces)
	namespaces = slices.Compact(namespaces)
	var out []admissionregistrationv1.ValidatingWebhook
	if len(namespaced) > 0 {
		w := spec.webhook(WebhookNamespaced, namespaced)
		w.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: namespaceNameLabel, Operator: metav1.LabelSelectorOpIn, Values: namespaces}}}
		out = append(out, w)
	}
	if len(cluster) > 0 {
		out = append(out, spec.webhook(WebhookCluster, cluster))
	}
	return out
}

// perType merges claims into one per type, whatever the namespace, with
// the union of their operations; Namespace is one of the type's namespaces
// ("" for a cluster-scoped type), sorted like rules.Merge.
func perType(claims []rules.Claim) []rules.Claim {
	flattened := make([]rules.Claim, len(claims))
	for i, c := range claims {
		flattened[i] = c
		flattened[i].Namespace = ""
	}
	merged := rules.Merge(rules.Result{Claims: flattened})
	for i := range merged {
		for _, c := range claims {
			if c.GVR.GroupResource() == merged[i].GVR.GroupResource() && c.Namespace != "" {
				merged[i].Namespace = c.Namespace
				break
			}
		}
	}
	return merged
}

// rulesFor is the rule of one claimed type and, when it has one and its
// updates are followed, the rule of its /scale (which the API server
// reviews as an UPDATE).
func rulesFor(c rules.Claim, scope admissionregistrationv1.ScopeType, scalable bool) []admissionregistrationv1.RuleWithOperations {
	rule := func(resource string, ops []admissionregistrationv1.OperationType) admissionregistrationv1.RuleWithOperations {
		return admissionregistrationv1.RuleWithOperations{Operations: ops, Rule: admissionregistrationv1.Rule{
			APIGroups: []string{c.GVR.Group}, APIVersions: []string{c.GVR.Version}, Resources: []string{resource}, Scope: &scope}}
	}
	var ops []admissionregistrationv1.OperationType
	for _, op := range c.Operations {
		ops = append(ops, admissionregistrationv1.OperationType(op))
	}
	out := []admissionregistrationv1.RuleWithOperations{rule(c.GVR.Resource, ops)}
	if scalable && slices.Contains(c.Operations, v1alpha3.OperationUpdate) {
		out = append(out, rule(c.GVR.Resource+"/scale", []admissionregistrationv1.OperationType{admissionregistrationv1.Update}))
	}
	return out
}

// webhook is one observer webhook with rules: it never fails a write and
// has no side effects, so dry runs reach it too (and are ignored).
func (s WebhookSpec) webhook(name string, rs []admissionregistrationv1.RuleWithOperations) admissionregistrationv1.ValidatingWebhook {
	ignore, none := admissionregistrationv1.Ignore, admissionregistrationv1.SideEffectClassNone
	equivalent := admissionregistrationv1.Equivalent
	timeout := cmp.Or(s.TimeoutSeconds, DefaultTimeoutSeconds)
	cc := *s.ClientConfig.DeepCopy()
	if cc.Service != nil {
		path := Path
		cc.Service.Path = &path
	}
	return admissionregistrationv1.ValidatingWebhook{
		Name: name, ClientConfig: cc, Rules: rs, FailurePolicy: &ignore, SideEffects: &none, TimeoutSeconds: &timeout,
		MatchPolicy: &equivalent, AdmissionReviewVersions: []string{"v1"},
	}
}
