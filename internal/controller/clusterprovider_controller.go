package controller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
)

// ClusterProviderReconciler validates a ClusterProvider's connection
// inputs and checks that its source API server answers. GitTargets project
// its readiness; the engine keeps the live connection.
type ClusterProviderReconciler struct {
	Client client.Client
	// SecretReader reads kubeconfig Secrets uncached.
	SecretReader      client.Reader
	LocalConfig       *rest.Config
	OperatorNamespace string
	// RecheckInterval is how often a provider is checked again.
	RecheckInterval time.Duration
	// Events, when set, records an Event for each change of the summary.
	Events events.EventRecorder
}

// Reconcile sets Validated (False/InvalidSpec: Stalled, a kubeconfig
// Secret missing or unparsable) and SourceClusterReachable
// (False/SourceUnreachable: Reconciling), and the summary.
func (r *ClusterProviderReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var cp v1alpha3.ClusterProvider
	if err := r.Client.Get(ctx, req.NamespacedName, &cp); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	base := cp.DeepCopy()
	conds := newConditionSet(&cp.Status.Conditions, cp.Generation)
	requeue := r.check(ctx, &cp, conds)
	cp.Status.ObservedGeneration = cp.Generation
	if err := r.Client.Status().Patch(ctx, &cp, client.MergeFrom(base)); err != nil {
		return reconcile.Result{}, fmt.Errorf("patching the status of ClusterProvider %s: %w", cp.Name, err)
	}
	announceTransition(r.Events, &cp, base.Status.Conditions, cp.Status.Conditions)
	return reconcile.Result{RequeueAfter: requeue}, nil
}

func (r *ClusterProviderReconciler) check(ctx context.Context, cp *v1alpha3.ClusterProvider, conds conditionSet) time.Duration {
	sc, err := sourceConfig(ctx, r.SecretReader, r.LocalConfig, r.OperatorNamespace, cp)
	if err != nil {
		reason := sourceConfigReason(err)
		conds.set(v1alpha3.ConditionValidated, metav1.ConditionFalse, reason, err.Error())
		conds.markStalled(reason, err.Error())
		return r.recheck()
	}
	conds.set(v1alpha3.ConditionValidated, metav1.ConditionTrue, v1alpha3.ReasonSucceeded, "connection inputs are valid")
	cfg := rest.CopyConfig(sc.Config)
	cfg.Timeout = 10 * time.Second
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	var version string
	if err == nil {
		var v interface{ String() string }
		v, err = dc.ServerVersion()
		if err == nil {
			version = v.String()
		}
	}
	if err != nil {
		msg := "the source API server does not answer: " + err.Error()
		conds.set(v1alpha3.ConditionSourceClusterReachable, metav1.ConditionFalse, v1alpha3.ReasonSourceUnreachable, msg)
		conds.markReconciling(v1alpha3.ReasonSourceUnreachable, msg)
		return retryShort * 5
	}
	cp.Status.ServerVersion = version
	conds.set(v1alpha3.ConditionSourceClusterReachable, metav1.ConditionTrue, v1alpha3.ReasonSucceeded, "the source API server answers ("+version+")")
	conds.markReady(v1alpha3.ReasonSucceeded, "source cluster reachable")
	return r.recheck()
}

func (r *ClusterProviderReconciler) recheck() time.Duration {
	if r.RecheckInterval > 0 {
		return r.RecheckInterval
	}
	return 5 * time.Minute
}

// SetupWithManager watches ClusterProviders' spec changes and the metadata
// of kubeconfig Secrets in the operator namespace, so a fixed or rotated
// Secret is checked at once (values are read uncached).
func (r *ClusterProviderReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("clusterprovider").
		For(&v1alpha3.ClusterProvider{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesMetadata(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.providersUsingSecret),
			builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
				return o.GetNamespace() == r.OperatorNamespace
			}))).
		Complete(r)
}

func (r *ClusterProviderReconciler) providersUsingSecret(ctx context.Context, secret client.Object) []reconcile.Request {
	var list v1alpha3.ClusterProviderList
	if err := r.Client.List(ctx, &list); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, cp := range list.Items {
		if kc := cp.Spec.KubeConfig; kc != nil && kc.SecretRef.Name == secret.GetName() {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: cp.Name}})
		}
	}
	return out
}
