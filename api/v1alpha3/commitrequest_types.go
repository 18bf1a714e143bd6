package v1alpha3

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// CommitRequestSpec asks for the open commit window of a GitTarget to be
// committed now. The whole spec is immutable: a request is a one-shot
// command, and changing it after the fact would invalidate an in-flight
// finalize.
// +kubebuilder:validation:XValidation:rule="has(self.targetRef)",message="targetRef is required: it names the GitTarget, in this namespace, whose open window is committed",fieldPath=".targetRef"
type CommitRequestSpec struct {
	// TargetRef names the GitTarget, in this namespace, whose open window is
	// committed.
	// +optional
	TargetRef TargetReference `json:"targetRef"`

	// Message replaces the rendered commit message verbatim.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.matches('[\\x00-\\x1f\\x7f]')",message="message must not contain control characters"
	Message string `json:"message,omitempty"`

	// CloseDelaySeconds waits before closing the window, so the submitter's
	// own in-flight changes can join it.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=300
	CloseDelaySeconds *int32 `json:"closeDelaySeconds,omitempty"`
}

// CommitRequestStatus reports the outcome of the request.
type CommitRequestStatus struct {
	CommonStatus `json:",inline"`

	// Branch the commit was pushed to.
	// +optional
	Branch string `json:"branch,omitempty"`

	// SHA of the pushed commit (after any conflict replay).
	// +optional
	SHA string `json:"sha,omitempty"`

	// URL of the commit in the forge's web UI, when it has one.
	// +optional
	URL string `json:"url,omitempty"`
}

// CommitRequest is a one-shot "save the open window now" signal.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=commitreq,categories=gitops
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.targetRef.name`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="SHA",type=string,JSONPath=`.status.sha`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
type CommitRequest struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable"
	Spec   CommitRequestSpec   `json:"spec"`
	Status CommitRequestStatus `json:"status,omitempty"`
}

// CommitRequestList is a list of CommitRequests.
//
// +kubebuilder:object:root=true
type CommitRequestList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CommitRequest `json:"items"`
}

func init() {
	SchemeBuilder.Register(&CommitRequest{}, &CommitRequestList{})
}
