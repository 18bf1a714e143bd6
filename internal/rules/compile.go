package rules

import (
	"fmt"
	"slices"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/discovery"
)

// CompileWatchRule compiles a WatchRule into namespaced claims for target,
// the GitTarget its targetRef names (the caller checks that; compile trusts
// it). types is the source cluster's catalog and namespaces its namespace
// snapshot, used to expand sourceNamespace "*" and evaluate selectors.
func CompileWatchRule(rule *v1alpha3.WatchRule, target *v1alpha3.GitTarget,
	types []discovery.TypeInfo, namespaces []NamespaceInfo) Result {
	idx := newTypeIndex(types)
	var b resultBuilder
	for i, item := range rule.Spec.Rules {
		operations, err := normalizeOperations(item.Operations)
		if err != nil {
			b.unresolvedItem(i, []string{err.Error()})
			continue
		}
		admitted, unauthorized := sourceNamespaces(item.SourceNamespace, rule.Namespace, target, namespaces)
		b.unauthorized = append(b.unauthorized, unauthorized...)
		matched, unresolved := resolveSelector(item.ResourceSelector, idx, namespacedScope)
		b.unresolvedItem(i, unresolved)
		for _, t := range matched {
			for _, namespace := range admitted {
				b.claim(t, namespace, operations)
			}
		}
	}
	return b.result()
}

// CompileClusterWatchRule compiles a ClusterWatchRule into cluster-scoped
// claims against types, the source cluster's catalog.
func CompileClusterWatchRule(rule *v1alpha3.ClusterWatchRule, types []discovery.TypeInfo) Result {
	idx := newTypeIndex(types)
	var b resultBuilder
	for i, item := range rule.Spec.Rules {
		// The deprecated scope field only accepts Cluster; admission enforces
		// it, but an object stored before that rule existed may say
		// Namespaced, and it must not silently widen to cluster scope.
		if item.Scope != "" && item.Scope != "Cluster" {
			b.unresolvedItem(i, []string{fmt.Sprintf(
				"scope %q is not accepted: a ClusterWatchRule selects cluster-scoped resources; use a WatchRule for namespaced ones",
				item.Scope)})
			continue
		}
		operations, err := normalizeOperations(item.Operations)
		if err != nil {
			b.unresolvedItem(i, []string{err.Error()})
			continue
		}
		matched, unresolved := resolveSelector(item.ResourceSelector, idx, clusterScope)
		b.unresolvedItem(i, unresolved)
		for _, t := range matched {
			b.claim(t, "", operations)
		}
	}
	return b.result()
}

// resultBuilder accumulates a Result across rule items.
type resultBuilder struct {
	claims       []Claim
	unresolved   []string
	unauthorized []string
}

func (b *resultBuilder) claim(t discovery.TypeInfo, namespace string, operations []v1alpha3.OperationType) {
	b.claims = append(b.claims, Claim{
		GVR:        t.GVR,
		Kind:       t.Kind,
		Namespace:  namespace,
		Sensitive:  t.Sensitive,
		Operations: slices.Clone(operations),
	})
}

// unresolvedItem records problems of rules[index], prefixed so a status
// message points at the item.
func (b *resultBuilder) unresolvedItem(index int, problems []string) {
	for _, problem := range problems {
		b.unresolved = append(b.unresolved, fmt.Sprintf("rules[%d]: %s", index, problem))
	}
}

func (b *resultBuilder) result() Result {
	unauthorized := slices.Clone(b.unauthorized)
	slices.Sort(unauthorized)
	return Result{
		Claims:       mergeClaims(b.claims),
		Unresolved:   uniqueInOrder(b.unresolved),
		Unauthorized: slices.Compact(unauthorized),
	}
}
