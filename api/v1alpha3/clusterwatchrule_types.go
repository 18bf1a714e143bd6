package v1alpha3

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// ClusterWatchRuleSpec selects cluster-scoped resources and routes them to a
// GitTarget.
// +kubebuilder:validation:XValidation:rule="has(self.targetRef)",message="targetRef is required: it names the GitTarget, by namespace and name, that receives the objects",fieldPath=".targetRef"
// +kubebuilder:validation:XValidation:rule="has(self.rules)",message="rules is required: at least one rule naming the resources to mirror",fieldPath=".rules"
type ClusterWatchRuleSpec struct {
	// TargetRef names the GitTarget, by namespace and name, that receives the
	// matching objects.
	// +optional
	TargetRef NamespacedTargetReference `json:"targetRef"`

	// Rules are OR-ed: an object matching any rule is mirrored.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Rules []ClusterResourceRule `json:"rules"`
}

// ClusterResourceRule selects cluster-scoped resources.
// +kubebuilder:validation:XValidation:rule="has(self.resources)",message="resources is required: the plural resource names to mirror, or '*'",fieldPath=".resources"
type ClusterResourceRule struct {
	ResourceSelector `json:",inline"`

	// Scope is deprecated: the rule kind carries the scope. Only Cluster is
	// accepted; use a WatchRule for namespaced resources.
	// +optional
	// +kubebuilder:validation:MaxLength=16
	// +kubebuilder:validation:XValidation:rule="self == 'Cluster'",message="scope only accepts Cluster: a ClusterWatchRule selects cluster-scoped resources; use a WatchRule for namespaced ones"
	Scope string `json:"scope,omitempty"`
}

// ClusterWatchRule selects cluster-scoped resources to mirror into a
// GitTarget.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=cwr,categories=gitops
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.targetRef.name`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
type ClusterWatchRule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ClusterWatchRuleSpec `json:"spec"`
	Status RuleStatus           `json:"status,omitempty"`
}

// ClusterWatchRuleList is a list of ClusterWatchRules.
//
// +kubebuilder:object:root=true
type ClusterWatchRuleList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterWatchRule `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ClusterWatchRule{}, &ClusterWatchRuleList{})
}
