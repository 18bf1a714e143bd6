package rules

import (
	"cmp"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
)

// Claim is one concrete thing a GitTarget follows: a type in one namespace
// (or cluster-wide), for some operations. The watch layer opens one watch
// per claim.
type Claim struct {
	GVR  schema.GroupVersionResource
	Kind string
	// Namespace is the concrete source namespace; "" for cluster-scoped
	// types. It is never a wildcard.
	Namespace string
	// Sensitive types are written only encrypted.
	Sensitive bool
	// Operations followed, in the order CREATE, UPDATE, DELETE; never empty
	// and never "*" (which, like an omitted list, expands to all three).
	Operations []v1alpha3.OperationType
}

// Result is the compiled form of one rule object.
type Result struct {
	// Claims are sorted by group, version, resource and namespace, with one
	// claim per (group, resource, namespace): see mergeClaims.
	Claims []Claim
	// Unresolved says, per rule item, what was named but could not be
	// claimed: not served, not followable, or of the other scope. Nothing is
	// claimed for those names.
	Unresolved []string
	// Unauthorized are the source namespaces rule items asked for that the
	// GitTarget's allowedSourceNamespaces does not admit, sorted.
	Unauthorized []string
}

// Merge unions the claims of several results into one claim per (group,
// resource, namespace), with the union of their operations, sorted like
// Result.Claims. It is how a GitTarget's rules become its watch set.
func Merge(results ...Result) []Claim {
	var all []Claim
	for _, r := range results {
		all = append(all, r.Claims...)
	}
	return mergeClaims(all)
}

// mergeClaims keeps one claim per (group, resource, namespace). The
// versions a resource is served at are views of the same objects: two
// claims at two versions would open two watches on the same objects and
// write each object's file twice, its apiVersion flipping with whichever
// wrote last. A resource claimed at several versions is followed at the
// one Kubernetes ranks highest (v1 over v1beta1 over v1alpha1,
// version.CompareKubeAwareVersionStrings), with the union of operations.
func mergeClaims(claims []Claim) []Claim {
	type claimKey struct {
		gr        schema.GroupResource
		namespace string
	}
	index := map[claimKey]int{}
	var out []Claim
	for _, c := range claims {
		key := claimKey{gr: c.GVR.GroupResource(), namespace: c.Namespace}
		c.Operations = unionOperations(nil, c.Operations)
		i, seen := index[key]
		if !seen {
			index[key] = len(out)
			out = append(out, c)
			continue
		}
		kept := &out[i]
		c.Operations = unionOperations(kept.Operations, c.Operations)
		c.Sensitive = kept.Sensitive || c.Sensitive
		if version.CompareKubeAwareVersionStrings(c.GVR.Version, kept.GVR.Version) > 0 {
			*kept = c
		} else {
			kept.Operations, kept.Sensitive = c.Operations, c.Sensitive
		}
	}
	slices.SortFunc(out, func(a, b Claim) int {
		return cmp.Or(
			cmp.Compare(a.GVR.Group, b.GVR.Group),
			cmp.Compare(a.GVR.Version, b.GVR.Version),
			cmp.Compare(a.GVR.Resource, b.GVR.Resource),
			cmp.Compare(a.Namespace, b.Namespace))
	})
	return out
}

// allOperations are the concrete operations, in their canonical order.
func allOperations() []v1alpha3.OperationType {
	return []v1alpha3.OperationType{v1alpha3.OperationCreate, v1alpha3.OperationUpdate, v1alpha3.OperationDelete}
}

// normalizeOperations expands a rule's operations to concrete ones in
// canonical order: omitted or "*" is all of them. An unknown operation is an
// error rather than being ignored, so a rule never follows less (or more)
// than it appears to.
func normalizeOperations(ops []v1alpha3.OperationType) ([]v1alpha3.OperationType, error) {
	if len(ops) == 0 || slices.Contains(ops, v1alpha3.OperationAll) {
		return allOperations(), nil
	}
	for _, op := range ops {
		if !slices.Contains(allOperations(), op) {
			return nil, fmt.Errorf("operation %q is not one of CREATE, UPDATE, DELETE or *", op)
		}
	}
	return unionOperations(nil, ops), nil
}

// unionOperations returns the operations in a or b, in canonical order.
func unionOperations(a, b []v1alpha3.OperationType) []v1alpha3.OperationType {
	var out []v1alpha3.OperationType
	for _, op := range allOperations() {
		if slices.Contains(a, op) || slices.Contains(b, op) {
			out = append(out, op)
		}
	}
	return out
}
