package rules

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
)

// NamespaceInfo is one source-cluster namespace as the namespace-label
// snapshot knows it.
type NamespaceInfo struct {
	Name   string
	Labels map[string]string
}

// NamespaceAllowed reports whether a GitTarget in ownNamespace with the
// given allowedSourceNamespaces policy may mirror from ns. The target's own
// namespace is always admitted; a nil policy admits nothing else; otherwise
// ns is admitted by exact name or by the selector matching its labels. An
// invalid selector admits nothing: a policy that cannot be evaluated must
// never widen what a target mirrors.
func NamespaceAllowed(policy *v1alpha3.NamespacePolicy, ownNamespace string, ns NamespaceInfo) bool {
	if ns.Name == "" {
		return false
	}
	if ns.Name == ownNamespace {
		return true
	}
	if policy == nil {
		return false
	}
	if slices.Contains(policy.Names, ns.Name) {
		return true
	}
	return selectorAdmits(policy.Selector, ns.Labels)
}

func selectorAdmits(selector *metav1.LabelSelector, namespaceLabels map[string]string) bool {
	if selector == nil {
		return false
	}
	parsed, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		return false
	}
	return parsed.Matches(labels.Set(namespaceLabels))
}

// sourceNamespaces resolves a WatchRule item's sourceNamespace to concrete
// namespaces, and the ones the target does not admit.
//
//   - omitted, or the rule's own namespace: that namespace, always allowed;
//   - "*": the rule's own namespace plus every known namespace the target
//     admits;
//   - another name: that namespace if the target admits it. A namespace
//     missing from the snapshot has no known labels, so only an exact name
//     in the policy admits it; evaluating a selector against "no labels"
//     could admit a namespace whose real labels the selector excludes.
func sourceNamespaces(sourceNamespace, ruleNamespace string, target *v1alpha3.GitTarget,
	known []NamespaceInfo) (admitted, unauthorized []string) {
	if ruleNamespace == "" {
		// A WatchRule always has a namespace; without one, "" would become a
		// cluster-wide watch of a namespaced type, so claim nothing.
		return nil, nil
	}
	policy, ownNamespace := targetPolicy(target, ruleNamespace)
	switch sourceNamespace {
	case "", ruleNamespace:
		return []string{ruleNamespace}, nil
	case wildcard:
		admitted = []string{ruleNamespace}
		for _, ns := range known {
			if NamespaceAllowed(policy, ownNamespace, ns) {
				admitted = append(admitted, ns.Name)
			}
		}
		slices.Sort(admitted)
		return slices.Compact(admitted), nil
	}
	ns, inSnapshot := findNamespace(known, sourceNamespace)
	if !inSnapshot && policy != nil {
		policy = &v1alpha3.NamespacePolicy{Names: policy.Names}
	}
	if NamespaceAllowed(policy, ownNamespace, ns) {
		return []string{sourceNamespace}, nil
	}
	return nil, []string{sourceNamespace}
}

// targetPolicy is the target's source-namespace policy and namespace. A nil
// target (which callers should not pass) admits only the rule's namespace.
func targetPolicy(target *v1alpha3.GitTarget, ruleNamespace string) (*v1alpha3.NamespacePolicy, string) {
	if target == nil {
		return nil, ruleNamespace
	}
	return target.Spec.AllowedSourceNamespaces, target.Namespace
}

func findNamespace(known []NamespaceInfo, name string) (NamespaceInfo, bool) {
	for _, ns := range known {
		if ns.Name == name {
			return ns, true
		}
	}
	return NamespaceInfo{Name: name}, false
}
