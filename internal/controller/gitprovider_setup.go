package controller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
)

// gitProviderReferencesIndex is a field index on GitProviders: the objects
// a provider reads credentials and its signing key from, as "Secret/<name>"
// and "ConfigMap/<name>" (spec.secretRef.name, spec.knownHostsRef, and
// spec.commit.signing.secretRef.name).
const gitProviderReferencesIndex = "gitprovider.credentialReferences"

// Bounds of the backoff for a provider whose probe fails transiently: the
// first retry comes quickly (a blip), later ones spread out so an
// unreachable remote is not hammered.
const (
	providerRetryBaseDelay = time.Second
	providerRetryMaxDelay  = 5 * time.Minute
)

// SetupWithManager registers the reconciler. Besides GitProvider spec
// changes it watches the Secrets and ConfigMaps providers reference, so a
// Secret that is created, fixed or rotated is picked up at once rather than
// at the next recheck. Those watches cache metadata only: Secret values are
// read on demand through SecretReader and never held in the cache. A
// GitTarget's new commit brings its provider back to report the request
// budget its workers spent (gitprovider_budget.go).
func (r *GitProviderReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.SecretReader == nil {
		r.SecretReader = mgr.GetAPIReader()
	}
	err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1alpha3.GitProvider{},
		gitProviderReferencesIndex, credentialReferences)
	if err != nil {
		return fmt.Errorf("indexing GitProviders by credentials Secret: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("gitprovider").
		// Status updates (our own patches) do not change the generation,
		// so they do not loop back into a reconcile and a probe.
		For(&v1alpha3.GitProvider{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesMetadata(&corev1.Secret{},
			handler.EnqueueRequestsFromMapFunc(r.providersReferencing(kindSecret)),
			builder.WithPredicates(r.referencedByAProvider(kindSecret))).
		WatchesMetadata(&corev1.ConfigMap{},
			handler.EnqueueRequestsFromMapFunc(r.providersReferencing(kindConfigMap)),
			builder.WithPredicates(r.referencedByAProvider(kindConfigMap))).
		Watches(&v1alpha3.GitTarget{}, r.refreshBudgetAfterCommit(),
			builder.WithPredicates(committedTargetPredicate)).
		WithOptions(controller.Options{
			RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](
				providerRetryBaseDelay, providerRetryMaxDelay),
		}).
		Complete(r)
}

// Kinds of the objects a GitProvider references, as they appear in index
// values.
const (
	kindSecret    = "Secret"
	kindConfigMap = "ConfigMap"
)

// referenceIndexValue is the index value for the object kind/name.
func referenceIndexValue(kind, name string) string { return kind + "/" + name }

// credentialReferences is the index function: the Secrets and ConfigMaps
// the provider reads, in the index's "Kind/name" form.
func credentialReferences(obj client.Object) []string {
	provider, ok := obj.(*v1alpha3.GitProvider)
	if !ok {
		return nil
	}
	var values []string
	if ref := provider.Spec.SecretRef; ref != nil {
		values = append(values, referenceIndexValue(kindSecret, ref.Name))
	}
	if ref := provider.Spec.KnownHostsRef; ref != nil {
		kind := ref.Kind
		if kind == "" {
			kind = kindSecret
		}
		values = append(values, referenceIndexValue(kind, ref.Name))
	}
	if signing := provider.Spec.Commit.Signing; signing != nil {
		values = append(values, referenceIndexValue(kindSecret, signing.SecretRef.Name))
	}
	return values
}

// providersReferencing maps an object of kind to requests for every
// GitProvider in its namespace that references it.
func (r *GitProviderReconciler) providersReferencing(kind string) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		providers, err := r.listReferencing(ctx, kind, obj)
		if err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "listing GitProviders that reference a changed object",
				"kind", kind, "namespace", obj.GetNamespace(), "name", obj.GetName())
			return nil
		}
		requests := make([]reconcile.Request, 0, len(providers))
		for _, provider := range providers {
			requests = append(requests, reconcile.Request{
				NamespacedName: types.NamespacedName{Namespace: provider.Namespace, Name: provider.Name},
			})
		}
		return requests
	}
}

// referencedByAProvider admits events only for objects some GitProvider
// references, so the cluster's other Secrets and ConfigMaps (service
// account tokens, Helm releases) cost a cache lookup and nothing more.
func (r *GitProviderReconciler) referencedByAProvider(kind string) predicate.Predicate {
	return predicate.NewPredicateFuncs(func(obj client.Object) bool {
		// Predicates get no context; the lookup is an in-memory index read.
		providers, err := r.listReferencing(context.Background(), kind, obj)
		// On an error, let the event through: the map function logs it,
		// and a spurious reconcile is cheaper than a missed one.
		return err != nil || len(providers) > 0
	})
}

func (r *GitProviderReconciler) listReferencing(ctx context.Context, kind string, obj client.Object) ([]v1alpha3.GitProvider, error) {
	var providers v1alpha3.GitProviderList
	err := r.Client.List(ctx, &providers, client.InNamespace(obj.GetNamespace()),
		client.MatchingFields{gitProviderReferencesIndex: referenceIndexValue(kind, obj.GetName())})
	if err != nil {
		return nil, fmt.Errorf("listing GitProviders referencing %s %s/%s: %w", kind, obj.GetNamespace(), obj.GetName(), err)
	}
	return providers.Items, nil
}
