package controller

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
)

// The request budget a GitProvider reports is mostly spent by the branch
// workers of its GitTargets, not by its probe. The probe's client shares
// GitHub's secondary-limit pacing with the workers (Pacers), so its budget
// counts what they sent; and each commit a GitTarget reports brings its
// provider back to refresh status.rateLimit, instead of waiting for the
// next recheck. The refresh waits BudgetRefreshDelay, so a burst of commits
// costs one probe (a read against the primary limit), not one per commit.

// defaultBudgetRefreshDelay is BudgetRefreshDelay's zero value.
const defaultBudgetRefreshDelay = 15 * time.Second

// refreshBudgetAfterCommit enqueues the provider of a GitTarget that
// committed after the refresh delay; the queue keeps one pending entry per
// provider, at its earliest time, so the commits of one delay share it.
func (r *GitProviderReconciler) refreshBudgetAfterCommit() handler.EventHandler {
	delay := r.BudgetRefreshDelay
	if delay <= 0 {
		delay = defaultBudgetRefreshDelay
	}
	return handler.Funcs{
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			for _, req := range r.providerOfCommittedTarget(ctx, e.ObjectNew) {
				q.AddAfter(req, delay)
			}
		},
	}
}

// committedTargetPredicate admits GitTarget updates whose last commit
// changed: a worker spent requests on the target's provider.
var committedTargetPredicate = updatedWhere(func(before, after *v1alpha3.GitTarget) bool {
	if after.Status.LastCommit == nil {
		return false
	}
	return before.Status.LastCommit == nil || before.Status.LastCommit.SHA != after.Status.LastCommit.SHA
})

// providerOfCommittedTarget maps a GitTarget that committed to its
// GitProvider, when that provider reports a request budget (a metered
// forge); a plain Git remote has none to refresh and is not probed again.
func (r *GitProviderReconciler) providerOfCommittedTarget(ctx context.Context, obj client.Object) []reconcile.Request {
	target, ok := obj.(*v1alpha3.GitTarget)
	if !ok {
		return nil
	}
	key := types.NamespacedName{Namespace: target.Namespace, Name: target.Spec.ProviderRef.Name}
	var provider v1alpha3.GitProvider
	if err := r.Client.Get(ctx, key, &provider); err != nil {
		if client.IgnoreNotFound(err) != nil {
			ctrl.LoggerFrom(ctx).Error(err, "reading the GitProvider of a GitTarget that committed", "gitProvider", key.String())
		}
		return nil
	}
	if provider.Status.RateLimit == nil {
		return nil
	}
	return []reconcile.Request{{NamespacedName: key}}
}
