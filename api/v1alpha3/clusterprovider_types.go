package v1alpha3

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// ClusterProviderSpec is one source-cluster connection and the policy of
// which control-cluster namespaces may mirror from it.
type ClusterProviderSpec struct {
	// KubeConfig selects a remote source cluster through a kubeconfig Secret
	// in the operator's namespace. Omitted, the source is the operator's own
	// cluster.
	// +optional
	KubeConfig *KubeConfigReference `json:"kubeConfig,omitempty"`

	// AllowedNamespaces are the control-cluster namespaces whose GitTargets may
	// reference this provider. Deny by default: omitted admits none. It does
	// not select or grant access to source namespaces.
	// +optional
	AllowedNamespaces *NamespacePolicy `json:"allowedNamespaces,omitempty"`

	// Attribution configures audit-based author attribution for this source.
	// +optional
	Attribution *AttributionSpec `json:"attribution,omitempty"`

	// QPS of the source client.
	// +optional
	// +kubebuilder:default=50
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	QPS int32 `json:"qps,omitempty"`

	// Burst of the source client.
	// +optional
	// +kubebuilder:default=100
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=20000
	Burst int32 `json:"burst,omitempty"`
}

// KubeConfigReference names the Secret key holding a kubeconfig.
// +kubebuilder:validation:XValidation:rule="has(self.secretRef)",message="secretRef is required: the Secret, in the operator's namespace, holding the kubeconfig",fieldPath=".secretRef"
type KubeConfigReference struct {
	// SecretRef names the Secret, in the operator's namespace, and its key
	// (default value).
	// +optional
	SecretRef SecretKeyReference `json:"secretRef"`
}

// AttributionSpec configures where this source's audit events arrive.
type AttributionSpec struct {
	// AuditRoute is the path segment of /audit-webhook/<auditRoute>. Omitted,
	// it is the provider's name.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="must be a DNS label: lower-case letters, digits and '-', starting and ending with a letter or digit"
	AuditRoute string `json:"auditRoute,omitempty"`
}

// AuditRoute is the path segment this source's audit events arrive under,
// /audit-webhook/<route>: spec.attribution.auditRoute, else the provider's
// name.
func (cp *ClusterProvider) AuditRoute() string {
	if cp.Spec.Attribution != nil && cp.Spec.Attribution.AuditRoute != "" {
		return cp.Spec.Attribution.AuditRoute
	}
	return cp.Name
}

// ClusterProviderStatus reports the connection's health.
type ClusterProviderStatus struct {
	CommonStatus `json:",inline"`

	// ServerVersion of the source API server, when reachable.
	// +optional
	ServerVersion string `json:"serverVersion,omitempty"`
}

// ClusterProvider is a source-cluster connection and its namespace access
// policy.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=cp,categories=gitops
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
type ClusterProvider struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec   ClusterProviderSpec   `json:"spec,omitempty"`
	Status ClusterProviderStatus `json:"status,omitempty"`
}

// ClusterProviderList is a list of ClusterProviders.
//
// +kubebuilder:object:root=true
type ClusterProviderList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterProvider `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ClusterProvider{}, &ClusterProviderList{})
}
