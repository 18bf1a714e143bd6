package sanitize

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The metadata fields that carry desired state; everything else in metadata
// is owned by the apiserver or by controllers.
const (
	metaName        = "name"
	metaNamespace   = "namespace"
	metaLabels      = "labels"
	metaAnnotations = "annotations"
)

// isVolatileAnnotation reports the annotations that clients and controllers
// rewrite without any change in desired state.
func isVolatileAnnotation(key string) bool {
	switch key {
	case "kubectl.kubernetes.io/last-applied-configuration",
		"deployment.kubernetes.io/revision",
		"control-plane.alpha.kubernetes.io/leader":
		return true
	}
	return false
}

// Sanitize returns the desired-state projection of obj as a deep copy; obj is
// not modified. The policy is described in the package documentation. It
// returns nil for a nil object.
//
// Only what is kept is copied, so a large status or managedFields costs
// nothing. Maps and slices of JSON-compatible content are copied; any other
// value is a scalar and is copied by value.
func Sanitize(obj *unstructured.Unstructured) *unstructured.Unstructured {
	if obj == nil {
		return nil
	}
	out := &unstructured.Unstructured{Object: make(map[string]interface{}, len(obj.Object))}
	for key, value := range obj.Object {
		switch key {
		case "status":
		case "metadata":
			meta, ok := value.(map[string]interface{})
			if !ok {
				out.Object[key] = deepCopy(value)
				continue
			}
			if projected := projectMetadata(meta); len(projected) > 0 {
				out.Object[key] = projected
			}
		default:
			copied := deepCopy(value)
			dropNullCreationTimestamps(copied)
			out.Object[key] = copied
		}
	}
	return out
}

// deepCopy copies JSON-compatible content. Unlike runtime.DeepCopyJSONValue
// it does not panic on a scalar type JSON decoding would not produce (an int
// set by hand): scalars are values, so they are copied as they are.
func deepCopy(value interface{}) interface{} {
	switch typed := value.(type) {
	case map[string]interface{}:
		out := make(map[string]interface{}, len(typed))
		for key, child := range typed {
			out[key] = deepCopy(child)
		}
		return out
	case []interface{}:
		out := make([]interface{}, len(typed))
		for i, child := range typed {
			out[i] = deepCopy(child)
		}
		return out
	}
	return value
}

// projectMetadata keeps the allowlisted metadata fields, minus volatile
// annotations and empty values.
func projectMetadata(meta map[string]interface{}) map[string]interface{} {
	projected := make(map[string]interface{}, 4)
	for _, key := range []string{metaName, metaNamespace} {
		if value, ok := meta[key].(string); ok && value != "" {
			projected[key] = value
		}
	}
	if labels, ok := meta[metaLabels].(map[string]interface{}); ok && len(labels) > 0 {
		projected[metaLabels] = deepCopy(labels)
	}
	if annotations, ok := meta[metaAnnotations].(map[string]interface{}); ok {
		kept := make(map[string]interface{}, len(annotations))
		for key, value := range annotations {
			if !isVolatileAnnotation(key) {
				kept[key] = deepCopy(value)
			}
		}
		if len(kept) > 0 {
			projected[metaAnnotations] = kept
		}
	}
	return projected
}

// dropNullCreationTimestamps walks value and removes "creationTimestamp: null"
// from every embedded "metadata" map: the zero-time serialisation older
// apiservers emit for pod templates.
func dropNullCreationTimestamps(value interface{}) {
	switch typed := value.(type) {
	case map[string]interface{}:
		if meta, ok := typed["metadata"].(map[string]interface{}); ok {
			if ts, present := meta["creationTimestamp"]; present && ts == nil {
				delete(meta, "creationTimestamp")
			}
		}
		for _, child := range typed {
			dropNullCreationTimestamps(child)
		}
	case []interface{}:
		for _, child := range typed {
			dropNullCreationTimestamps(child)
		}
	}
}

// Identity names an object for logs and for building a planner identity.
type Identity struct {
	Group, Version, Kind, Namespace, Name string
}

// IdentityOf reads the identity of obj from its apiVersion, kind and metadata.
func IdentityOf(obj *unstructured.Unstructured) Identity {
	gvk := obj.GroupVersionKind()
	return Identity{
		Group:     gvk.Group,
		Version:   gvk.Version,
		Kind:      gvk.Kind,
		Namespace: obj.GetNamespace(),
		Name:      obj.GetName(),
	}
}

// String renders the identity as "group/Kind namespace/name", with "core"
// for the core group and no namespace for cluster-scoped objects.
func (id Identity) String() string {
	group := id.Group
	if group == "" {
		group = "core"
	}
	if id.Namespace == "" {
		return fmt.Sprintf("%s/%s %s", group, id.Kind, id.Name)
	}
	return fmt.Sprintf("%s/%s %s/%s", group, id.Kind, id.Namespace, id.Name)
}
