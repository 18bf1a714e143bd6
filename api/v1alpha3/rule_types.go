package v1alpha3

// OperationType is an API operation a rule follows.
// +kubebuilder:validation:Enum=CREATE;UPDATE;DELETE;*
type OperationType string

const (
	OperationCreate OperationType = "CREATE"
	OperationUpdate OperationType = "UPDATE"
	OperationDelete OperationType = "DELETE"
	OperationAll    OperationType = "*"
)

// ResourceSelector is the part of a rule that names API resources, shared by
// WatchRule and ClusterWatchRule.
type ResourceSelector struct {
	// Operations followed; omitted means all.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=4
	Operations []OperationType `json:"operations,omitempty"`

	// APIGroups of the resources: "" is the core group, "*" every group.
	// Omitted, the named resources are resolved across served groups.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:XValidation:rule="self.matches('^([*]|[a-z0-9]([-a-z0-9.]*[a-z0-9])?)?$')",message="an API group is empty (the core group), '*' or a DNS name such as apps or cert-manager.io"
	APIGroups []string `json:"apiGroups,omitempty"`

	// APIVersions of the resources; omitted means the preferred served
	// version.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:XValidation:rule="self.matches('^([*]|v[0-9]+((alpha|beta)[0-9]+)?)$')",message="an API version is '*' or a version such as v1, v1beta1 or v2alpha3"
	APIVersions []string `json:"apiVersions,omitempty"`

	// Resources are plural resource names, or "*". Subresources (a "/") are
	// refused: mirroring works on top-level objects. Required.
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:XValidation:rule="!self.contains('/')",message="subresources are not allowed in resources; name the top-level resource"
	// +kubebuilder:validation:items:XValidation:rule="self.matches('^([*]|[a-z0-9]([-a-z0-9.]*[a-z0-9])?(/.*)?)$')",message="a resource is '*' or a plural lower-case resource name such as configmaps"
	// +optional
	Resources []string `json:"resources"`
}

// TargetReference names a GitTarget in the referrer's namespace.
// +kubebuilder:validation:XValidation:rule="has(self.name)",message="name is required: the name of a GitTarget in this namespace",fieldPath=".name"
type TargetReference struct {
	// Name of the GitTarget.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$')",message="must be a Kubernetes object name: lower-case letters, digits, '-' and '.', starting and ending with a letter or digit"
	// +optional
	Name string `json:"name"`
}

// NamespacedTargetReference names a GitTarget in a given namespace.
// +kubebuilder:validation:XValidation:rule="has(self.name)",message="name is required: the name of the GitTarget",fieldPath=".name"
// +kubebuilder:validation:XValidation:rule="has(self.namespace)",message="namespace is required: the namespace of the GitTarget",fieldPath=".namespace"
type NamespacedTargetReference struct {
	// Name of the GitTarget.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$')",message="must be a Kubernetes object name: lower-case letters, digits, '-' and '.', starting and ending with a letter or digit"
	// +optional
	Name string `json:"name"`

	// Namespace of the GitTarget.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="must be a DNS label: lower-case letters, digits and '-', starting and ending with a letter or digit"
	// +optional
	Namespace string `json:"namespace"`
}

// RuleStatus is the status of WatchRule and ClusterWatchRule.
type RuleStatus struct {
	CommonStatus `json:",inline"`

	// ResolvedTypes counts the (group, version, resource) types the rule
	// resolved to.
	// +optional
	ResolvedTypes int32 `json:"resolvedTypes,omitempty"`
}
