package controller

import (
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/discovery"
	"github.com/configbutler/gitops-reverser/internal/rules"
)

type discoveryTypes = discovery.TypeInfo

// watchRule adapts a WatchRule to ruleObject.
type watchRule struct{ v1alpha3.WatchRule }

func (w *watchRule) targetKey() types.NamespacedName {
	return types.NamespacedName{Namespace: w.Namespace, Name: w.Spec.TargetRef.Name}
}
func (w *watchRule) object() client.Object        { return &w.WatchRule }
func (w *watchRule) status() *v1alpha3.RuleStatus { return &w.Status }
func (w *watchRule) compile(t *v1alpha3.GitTarget, ts []discoveryTypes, ns []rules.NamespaceInfo) rules.Result {
	return rules.CompileWatchRule(&w.WatchRule, t, ts, ns)
}

// clusterWatchRule adapts a ClusterWatchRule to ruleObject.
type clusterWatchRule struct{ v1alpha3.ClusterWatchRule }

func (c *clusterWatchRule) targetKey() types.NamespacedName {
	return types.NamespacedName{Namespace: c.Spec.TargetRef.Namespace, Name: c.Spec.TargetRef.Name}
}
func (c *clusterWatchRule) object() client.Object        { return &c.ClusterWatchRule }
func (c *clusterWatchRule) status() *v1alpha3.RuleStatus { return &c.Status }
func (c *clusterWatchRule) compile(_ *v1alpha3.GitTarget, ts []discoveryTypes, _ []rules.NamespaceInfo) rules.Result {
	return rules.CompileClusterWatchRule(&c.ClusterWatchRule, ts)
}
