package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
)

// SetupWithManager registers the reconciler with narrow dependency watches:
// the deletion of a GitTarget or a change in whether it holds its path (an
// overlapping one may now keep the path, or lose it),
// spec changes and resync requests of the target itself, spec changes and
// Ready transitions of providers (and a GitProvider's new
// signing key, for every target of its repository), rule changes, namespace label changes, CRD changes, and the
// engine's runtime notifications.
func (r *GitTargetReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("gittarget").
		WithOptions(controller.Options{NeedLeaderElection: ptr.To(!r.EveryReplica)}).
		For(&v1alpha3.GitTarget{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, resyncRequested()))).
		Watches(&v1alpha3.GitTarget{}, handler.EnqueueRequestsFromMapFunc(r.targetsOverlapping),
			builder.WithPredicates(predicate.Or(deleted(), pathClaimChanged()))).
		Watches(&v1alpha3.GitProvider{}, handler.EnqueueRequestsFromMapFunc(r.targetsOfRepository),
			builder.WithPredicates(predicate.Or(specOrReadyChanged(), signingKeyChanged()))).
		Watches(&v1alpha3.ClusterProvider{}, handler.EnqueueRequestsFromMapFunc(r.targetsOfClusterProvider),
			builder.WithPredicates(specOrReadyChanged())).
		Watches(&v1alpha3.WatchRule{}, handler.EnqueueRequestsFromMapFunc(r.targetOfWatchRule),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1alpha3.ClusterWatchRule{}, handler.EnqueueRequestsFromMapFunc(r.targetOfClusterWatchRule),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.allTargets),
			builder.WithPredicates(predicate.LabelChangedPredicate{})).
		Watches(&apiextensionsv1.CustomResourceDefinition{}, handler.EnqueueRequestsFromMapFunc(r.refreshAndAllTargets),
			builder.WithPredicates(crdServingChanged())).
		WatchesRawSource(source.Channel(r.Engine.Changed(), &handler.EnqueueRequestForObject{})).
		Complete(r)
}

// specOrReadyChanged admits creates, deletes, spec changes and Ready
// transitions, not status heartbeats.
func specOrReadyChanged() predicate.Predicate {
	return predicate.Or(predicate.GenerationChangedPredicate{}, predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool { return readyStatus(e.ObjectOld) != readyStatus(e.ObjectNew) },
	})
}

// deleted admits only deletions.
func deleted() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// pathClaimChanged admits a GitTarget status update that may change
// whether it holds its path (pathClaimSignal): its own checks passing or
// refusing it, its first commit. Without it a younger target would wait
// for the periodic resync to give the path back to, or take it from, an
// older one whose GitProvider did not change (a younger target checked
// while the older one's status still said GitProviderNotFound, or a
// ClusterProvider that starts or stops admitting the older one's
// namespace).
func pathClaimChanged() predicate.Predicate {
	return updatedWhere(func(before, after *v1alpha3.GitTarget) bool { return pathClaimSignal(before) != pathClaimSignal(after) })
}

// resyncRequested admits a new value of the resync-requested-at
// annotation, which changes no generation.
func resyncRequested() predicate.Predicate {
	return updatedWhere(func(before, after *v1alpha3.GitTarget) bool {
		return before.Annotations[v1alpha3.ResyncRequestedAtAnnotation] != after.Annotations[v1alpha3.ResyncRequestedAtAnnotation]
	})
}

// updatedWhere admits only updates of a T, and only those where
// changed(before, after) holds.
func updatedWhere[T client.Object](changed func(before, after T) bool) predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			before, okBefore := e.ObjectOld.(T)
			after, okAfter := e.ObjectNew.(T)
			return okBefore && okAfter && changed(before, after)
		},
	}
}

// crdServingChanged admits a CRD's creation, deletion, spec change, and
// the moment it becomes Established: only then does discovery serve it, so
// refreshing at creation alone would miss it.
func crdServingChanged() predicate.Predicate {
	return predicate.Or(predicate.GenerationChangedPredicate{}, predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool { return crdEstablished(e.ObjectOld) != crdEstablished(e.ObjectNew) },
	})
}

func crdEstablished(obj client.Object) bool {
	crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
	if !ok {
		return false
	}
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

func readyStatus(obj client.Object) string {
	var conds []metav1.Condition
	switch o := obj.(type) {
	case *v1alpha3.GitProvider:
		conds = o.Status.Conditions
	case *v1alpha3.ClusterProvider:
		conds = o.Status.Conditions
	}
	if c := meta.FindStatusCondition(conds, v1alpha3.ConditionReady); c != nil {
		return string(c.Status)
	}
	return ""
}

func (r *GitTargetReconciler) targetsWhere(ctx context.Context, opts []client.ListOption, match func(*v1alpha3.GitTarget) bool) []reconcile.Request {
	var list v1alpha3.GitTargetList
	if err := r.Client.List(ctx, &list, opts...); err != nil {
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if match(&list.Items[i]) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: list.Items[i].Namespace, Name: list.Items[i].Name}})
		}
	}
	return out
}

func (r *GitTargetReconciler) targetsOfProvider(ctx context.Context, obj client.Object) []reconcile.Request {
	return r.targetsWhere(ctx, []client.ListOption{client.InNamespace(obj.GetNamespace())},
		func(t *v1alpha3.GitTarget) bool { return t.Spec.ProviderRef.Name == obj.GetName() })
}

func (r *GitTargetReconciler) targetsOfClusterProvider(ctx context.Context, obj client.Object) []reconcile.Request {
	return r.targetsWhere(ctx, nil, func(t *v1alpha3.GitTarget) bool { return t.Spec.ClusterProviderName() == obj.GetName() })
}

func (r *GitTargetReconciler) targetOfWatchRule(_ context.Context, obj client.Object) []reconcile.Request {
	wr, ok := obj.(*v1alpha3.WatchRule)
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: wr.Namespace, Name: wr.Spec.TargetRef.Name}}}
}

func (r *GitTargetReconciler) targetOfClusterWatchRule(_ context.Context, obj client.Object) []reconcile.Request {
	cwr, ok := obj.(*v1alpha3.ClusterWatchRule)
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: cwr.Spec.TargetRef.Namespace, Name: cwr.Spec.TargetRef.Name}}}
}

func (r *GitTargetReconciler) allTargets(ctx context.Context, _ client.Object) []reconcile.Request {
	return r.targetsWhere(ctx, nil, func(*v1alpha3.GitTarget) bool { return true })
}

// refreshAndAllTargets rescans the local source's API surface before the
// targets resolve their rules again, so a new CRD is followed at once
// instead of on the next periodic refresh.
func (r *GitTargetReconciler) refreshAndAllTargets(ctx context.Context, obj client.Object) []reconcile.Request {
	r.Engine.RefreshLocalSources(ctx)
	return r.allTargets(ctx, obj)
}
