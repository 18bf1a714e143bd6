package v1alpha3

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// WatchRuleSpec selects namespaced resources and routes them to a GitTarget
// in the rule's namespace.
// +kubebuilder:validation:XValidation:rule="has(self.targetRef)",message="targetRef is required: it names the GitTarget, in this namespace, that receives the objects",fieldPath=".targetRef"
// +kubebuilder:validation:XValidation:rule="has(self.rules)",message="rules is required: at least one rule naming the resources to mirror",fieldPath=".rules"
type WatchRuleSpec struct {
	// TargetRef names the GitTarget, in this namespace, that receives the
	// matching objects.
	// +optional
	TargetRef TargetReference `json:"targetRef"`

	// Rules are OR-ed: an object matching any rule is mirrored.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Rules []NamespacedResourceRule `json:"rules"`
}

// NamespacedResourceRule selects namespaced resources in one source
// namespace choice.
// +kubebuilder:validation:XValidation:rule="has(self.resources)",message="resources is required: the plural resource names to mirror, or '*'",fieldPath=".resources"
type NamespacedResourceRule struct {
	ResourceSelector `json:",inline"`

	// SourceNamespace to watch: omitted for the rule's own namespace, an exact
	// name, or "*" for every namespace the GitTarget's
	// allowedSourceNamespaces admits.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^([*]|[a-z0-9]([-a-z0-9]*[a-z0-9])?)$')",message="must be '*' or a namespace name: lower-case letters, digits and '-', starting and ending with a letter or digit"
	SourceNamespace string `json:"sourceNamespace,omitempty"`
}

// WatchRule selects namespaced resources to mirror into a GitTarget.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=wr,categories=gitops
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.targetRef.name`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
type WatchRule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WatchRuleSpec `json:"spec"`
	Status RuleStatus    `json:"status,omitempty"`
}

// WatchRuleList is a list of WatchRules.
//
// +kubebuilder:object:root=true
type WatchRuleList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WatchRule `json:"items"`
}

func init() {
	SchemeBuilder.Register(&WatchRule{}, &WatchRuleList{})
}
