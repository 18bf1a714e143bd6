package v1alpha3

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// LocalObjectReference names an object in the referrer's namespace.
// +kubebuilder:validation:XValidation:rule="has(self.name)",message="name is required: the name of an object in this namespace",fieldPath=".name"
type LocalObjectReference struct {
	// Name of the referenced object.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$')",message="must be a Kubernetes object name: lower-case letters, digits, '-' and '.', starting and ending with a letter or digit"
	// +optional
	Name string `json:"name"`
}

// SecretKeyReference names one key of a Secret in the referrer's namespace.
// +kubebuilder:validation:XValidation:rule="has(self.name)",message="name is required: the name of a Secret",fieldPath=".name"
type SecretKeyReference struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$')",message="must be a Kubernetes object name: lower-case letters, digits, '-' and '.', starting and ending with a letter or digit"
	// +optional
	Name string `json:"name"`

	// Key within the Secret. Each field that uses this type documents its
	// default.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[-._a-zA-Z0-9]+$')",message="must be a Secret key: letters, digits, '-', '_' and '.'"
	Key string `json:"key,omitempty"`
}

// NamespacePolicy admits namespaces by exact name or by label selector. An
// empty policy admits nothing; an empty selector ({}) admits every namespace.
type NamespacePolicy struct {
	// Names admitted exactly.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="must be a namespace name: lower-case letters, digits and '-', starting and ending with a letter or digit"
	Names []string `json:"names,omitempty"`

	// Selector admits namespaces whose labels match.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
}

// CommonStatus is the status every kind reports: kstatus-compatible
// conditions and the generation they describe.
type CommonStatus struct {
	// ObservedGeneration is the metadata.generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready is the summary, Reconciling and Stalled the kstatus
	// progress/blocked pair; each kind adds domain conditions.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}
