package discovery

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// requiredVerbs are the verbs a type must serve to be followed: watch (with
// sendInitialEvents) is the only object-state source, list is the fallback
// snapshot for servers that refuse streaming lists, and get resolves a single
// object by name.
func requiredVerbs() []string { return []string{"get", "list", "watch"} }

// RuntimeOnlyResources names the types that are never followed, whatever
// verbs they serve, each with the reason. Their objects are runtime records,
// heartbeats or state derived by a controller from other objects: mirroring
// them would flood Git with churn and restore nothing a user declared.
//
// It returns a fresh map on every call so no caller can change the policy
// for another.
func RuntimeOnlyResources() map[schema.GroupResource]string {
	return map[schema.GroupResource]string{
		// Events are an operational log of what happened, emitted by every
		// controller; they are not declared and expire after an hour.
		{Group: "", Resource: "events"}:              "events are an operational log, not desired state",
		{Group: "events.k8s.io", Resource: "events"}: "events are an operational log, not desired state",
		// Leases are leader-election and node heartbeats renewed every few
		// seconds; lease candidates are their coordinated-election peers.
		{Group: "coordination.k8s.io", Resource: "leases"}:          "leases are heartbeats renewed every few seconds",
		{Group: "coordination.k8s.io", Resource: "leasecandidates"}: "lease candidates are leader-election heartbeats",
		// Endpoints and EndpointSlices are computed from Services and Pods by
		// the endpoint controllers; the Service is the declared object.
		{Group: "", Resource: "endpoints"}:                      "endpoints are derived from Services by a controller",
		{Group: "discovery.k8s.io", Resource: "endpointslices"}: "endpoint slices are derived from Services by a controller",
		// Nodes register themselves through their kubelet and carry a status
		// heartbeat; their lifecycle belongs to the infrastructure.
		{Group: "", Resource: "nodes"}: "nodes are registered by kubelets and carry heartbeat status",
		// ComponentStatuses are computed on read (and deprecated); there is
		// no stored object to mirror.
		{Group: "", Resource: "componentstatuses"}: "component statuses are computed on read",
		// CSINodes are written by kubelets per node; VolumeAttachments by the
		// attach/detach controller for scheduled pods.
		{Group: "storage.k8s.io", Resource: "csinodes"}:          "CSI nodes are written by kubelets",
		{Group: "storage.k8s.io", Resource: "volumeattachments"}: "volume attachments are created by the attach/detach controller",
		// StorageVersions are the API server's own bookkeeping of encoding
		// versions during upgrades.
		{Group: "internal.apiserver.k8s.io", Resource: "storageversions"}: "storage versions are API server bookkeeping",
		// ResourceSlices are published by DRA drivers to advertise hardware.
		{Group: "resource.k8s.io", Resource: "resourceslices"}: "resource slices are published by DRA drivers",
		// Review types are create-only request/response calls; nothing is
		// stored (they serve no list/watch either, this states the intent).
		{Group: "authentication.k8s.io", Resource: "tokenreviews"}:             "reviews are request/response calls, nothing is stored",
		{Group: "authentication.k8s.io", Resource: "selfsubjectreviews"}:       "reviews are request/response calls, nothing is stored",
		{Group: "authorization.k8s.io", Resource: "subjectaccessreviews"}:      "reviews are request/response calls, nothing is stored",
		{Group: "authorization.k8s.io", Resource: "selfsubjectaccessreviews"}:  "reviews are request/response calls, nothing is stored",
		{Group: "authorization.k8s.io", Resource: "localsubjectaccessreviews"}: "reviews are request/response calls, nothing is stored",
		{Group: "authorization.k8s.io", Resource: "selfsubjectrulesreviews"}:   "reviews are request/response calls, nothing is stored",
		// Bindings are the scheduler's create-only "assign this pod" call.
		{Group: "", Resource: "bindings"}: "bindings are the scheduler's create-only pod assignment",
	}
}

// Followability is the single decision on whether a type may be followed: it
// is followable iff it serves get, list and watch and is not runtime-only.
// When it is not, reason says why, in words fit for a status message.
func Followability(gr schema.GroupResource, verbs []string) (followable bool, reason string) {
	if why, runtimeOnly := RuntimeOnlyResources()[gr]; runtimeOnly {
		return false, "runtime-only: " + why
	}
	var missing []string
	for _, verb := range requiredVerbs() {
		if !slices.Contains(verbs, verb) {
			missing = append(missing, verb)
		}
	}
	if len(missing) > 0 {
		return false, fmt.Sprintf("does not serve %s (get, list and watch are required)", strings.Join(missing, ", "))
	}
	return true, ""
}

// IsControllerOwned reports whether obj is managed by a controller: it has an
// ownerReference with controller: true. Such an object is generated from its
// owner (a ReplicaSet from a Deployment, a Pod from a ReplicaSet), so the
// owner is what gets mirrored; writing the child too would record derived
// state and churn on every rollout.
func IsControllerOwned(obj metav1.Object) bool {
	return metav1.GetControllerOfNoCopy(obj) != nil
}

// Policy is the per-installation part of the type verdicts.
type Policy struct {
	// AdditionalSensitive are types written only encrypted, on top of core
	// Secrets (--additional-sensitive-resources).
	AdditionalSensitive []schema.GroupResource
}

// IsSensitive reports whether objects of gr must only be written encrypted.
// Core Secrets always are; the policy can add types but never remove Secrets.
func (p Policy) IsSensitive(gr schema.GroupResource) bool {
	if gr == (schema.GroupResource{Group: "", Resource: "secrets"}) {
		return true
	}
	return slices.Contains(p.AdditionalSensitive, gr)
}
