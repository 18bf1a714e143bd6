package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/engine"
	"github.com/configbutler/gitops-reverser/internal/rules"
)

// RuleReconciler reports the status of WatchRules and ClusterWatchRules:
// ResourcesResolved (what the rule resolved to against the target's source)
// and GitTargetReady (the target's write readiness). The GitTarget
// reconciler does the mirroring; this one only explains.
type RuleReconciler struct {
	Client client.Client
	Engine *engine.Engine
	// Cluster selects ClusterWatchRules instead of WatchRules.
	Cluster bool
}

// ruleObject is what both rule kinds offer the reconciler.
type ruleObject interface {
	// object is the API object itself, for the client.
	object() client.Object
	targetKey() types.NamespacedName
	status() *v1alpha3.RuleStatus
	compile(target *v1alpha3.GitTarget, types []discoveryTypes, namespaces []rules.NamespaceInfo) rules.Result
}

// Reconcile sets ResourcesResolved, GitTargetReady and the summary.
func (r *RuleReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	rule := r.newRule()
	obj := rule.object()
	if err := r.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	base := obj.DeepCopyObject().(client.Object)
	st := rule.status()
	conds := newConditionSet(&st.Conditions, obj.GetGeneration())
	requeue := r.explain(ctx, rule, conds)
	st.ObservedGeneration = obj.GetGeneration()
	if err := r.Client.Status().Patch(ctx, obj, client.MergeFrom(base)); err != nil {
		return reconcile.Result{}, fmt.Errorf("patching the status of %s: %w", req.NamespacedName, err)
	}
	return reconcile.Result{RequeueAfter: requeue}, nil
}

func (r *RuleReconciler) explain(ctx context.Context, rule ruleObject, conds conditionSet) time.Duration {
	var target v1alpha3.GitTarget
	err := r.Client.Get(ctx, rule.targetKey(), &target)
	if apierrors.IsNotFound(err) {
		msg := fmt.Sprintf("GitTarget %s does not exist", rule.targetKey())
		conds.set(v1alpha3.ConditionGitTargetReady, metav1.ConditionFalse, v1alpha3.ReasonGitTargetNotFound, msg)
		conds.set(v1alpha3.ConditionResourcesResolved, metav1.ConditionUnknown, v1alpha3.ReasonGitTargetNotFound, msg)
		conds.markStalled(v1alpha3.ReasonGitTargetNotFound, msg)
		return time.Minute
	}
	if err != nil {
		conds.markReconciling(v1alpha3.ReasonProgressing, err.Error())
		return retryShort
	}
	resolved := r.resolve(ctx, rule, &target, conds)
	targetReady := meta.IsStatusConditionTrue(target.Status.Conditions, v1alpha3.ConditionReady)
	if targetReady {
		conds.set(v1alpha3.ConditionGitTargetReady, metav1.ConditionTrue, v1alpha3.ReasonSucceeded, "GitTarget "+target.Name+" is Ready")
	} else {
		msg := "GitTarget " + target.Name + " is not Ready"
		if c := meta.FindStatusCondition(target.Status.Conditions, v1alpha3.ConditionReady); c != nil && c.Message != "" {
			msg += ": " + c.Message
		}
		conds.set(v1alpha3.ConditionGitTargetReady, metav1.ConditionFalse, v1alpha3.ReasonGitTargetNotReady, msg)
	}
	switch c := conds.find(v1alpha3.ConditionResourcesResolved); {
	case !resolved:
		conds.markStalled(c.Reason, c.Message)
	case !targetReady:
		conds.markReconciling(v1alpha3.ReasonGitTargetNotReady, conds.find(v1alpha3.ConditionGitTargetReady).Message)
		return retryShort
	default:
		conds.markReady(v1alpha3.ReasonSucceeded, c.Message)
	}
	return time.Minute
}

// resolve compiles the rule against the target's source and reports the
// outcome on ResourcesResolved; it returns false when the rule names
// something it cannot claim.
func (r *RuleReconciler) resolve(ctx context.Context, rule ruleObject, target *v1alpha3.GitTarget, conds conditionSet) bool {
	src := r.Engine.SourceFor(target.Spec.ClusterProviderName())
	if src == nil {
		conds.set(v1alpha3.ConditionResourcesResolved, metav1.ConditionUnknown, v1alpha3.ReasonProgressing,
			"the target's source cluster is not connected yet")
		return true
	}
	var namespaces []rules.NamespaceInfo
	if !r.Cluster {
		ns, err := sourceNamespaces(ctx, r.Client, src)
		if err != nil {
			conds.set(v1alpha3.ConditionResourcesResolved, metav1.ConditionUnknown, v1alpha3.ReasonProgressing, err.Error())
			return true
		}
		namespaces = ns
	}
	res := rule.compile(target, src.Catalog.Types(), namespaces)
	rule.status().ResolvedTypes = int32(len(res.Claims))
	switch {
	case len(res.Unauthorized) > 0:
		conds.set(v1alpha3.ConditionResourcesResolved, metav1.ConditionFalse, v1alpha3.ReasonSourceNamespaceNotAuthorized,
			fmt.Sprintf("GitTarget %s's allowedSourceNamespaces does not admit: %s", target.Name, strings.Join(res.Unauthorized, ", ")))
		return false
	case len(res.Unresolved) > 0:
		conds.set(v1alpha3.ConditionResourcesResolved, metav1.ConditionFalse, v1alpha3.ReasonResourcesUnresolved,
			"nothing is watched for: "+strings.Join(res.Unresolved, "; "))
		return false
	}
	conds.set(v1alpha3.ConditionResourcesResolved, metav1.ConditionTrue, v1alpha3.ReasonSucceeded,
		fmt.Sprintf("resolved to %d watched (type, namespace) pairs", len(res.Claims)))
	return true
}

func (r *RuleReconciler) newRule() ruleObject {
	if r.Cluster {
		return &clusterWatchRule{}
	}
	return &watchRule{}
}

// SetupWithManager watches the rules (spec changes) and their GitTargets
// (any status change: GitTargetReady mirrors it).
func (r *RuleReconciler) SetupWithManager(mgr ctrl.Manager) error {
	name, obj := "watchrule", client.Object(&v1alpha3.WatchRule{})
	if r.Cluster {
		name, obj = "clusterwatchrule", &v1alpha3.ClusterWatchRule{}
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(name).
		For(obj, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1alpha3.GitTarget{}, handler.EnqueueRequestsFromMapFunc(r.rulesOfTarget)).
		Complete(r)
}

func (r *RuleReconciler) rulesOfTarget(ctx context.Context, obj client.Object) []reconcile.Request {
	var out []reconcile.Request
	if r.Cluster {
		var list v1alpha3.ClusterWatchRuleList
		if r.Client.List(ctx, &list) != nil {
			return nil
		}
		for _, cwr := range list.Items {
			if cwr.Spec.TargetRef.Namespace == obj.GetNamespace() && cwr.Spec.TargetRef.Name == obj.GetName() {
				out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: cwr.Name}})
			}
		}
		return out
	}
	var list v1alpha3.WatchRuleList
	if r.Client.List(ctx, &list, client.InNamespace(obj.GetNamespace())) != nil {
		return nil
	}
	for _, wr := range list.Items {
		if wr.Spec.TargetRef.Name == obj.GetName() {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: wr.Namespace, Name: wr.Name}})
		}
	}
	return out
}
