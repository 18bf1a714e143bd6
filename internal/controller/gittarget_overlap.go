package controller

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/forgeconn"
)

// pathHolder finds the GitTarget that keeps a path overlapping t's: one in
// any namespace, through any GitProvider whose URL names the same
// repository (forgeconn.RepositoryKey), on the same branch, that claimed
// first. nil when t may have its path. A target whose GitProvider does not
// exist writes nothing and holds nothing; when its provider appears, the
// GitProvider watch re-checks every target of that repository.
func (r *GitTargetReconciler) pathHolder(ctx context.Context, t *v1alpha3.GitTarget, provider *v1alpha3.GitProvider) (*v1alpha3.GitTarget, error) {
	var others v1alpha3.GitTargetList
	if err := r.Client.List(ctx, &others); err != nil {
		return nil, fmt.Errorf("listing GitTargets to check path overlap: %w", err)
	}
	repository := forgeconn.RepositoryKey(provider.Spec.URL)
	keys := map[client.ObjectKey]string{{Namespace: t.Namespace, Name: provider.Name}: repository}
	var holder *v1alpha3.GitTarget
	for i := range others.Items {
		o := &others.Items[i]
		if o.Namespace == t.Namespace && o.Name == t.Name || !o.DeletionTimestamp.IsZero() ||
			o.Spec.Branch != t.Spec.Branch || !pathsOverlap(o.Spec.Path, t.Spec.Path) || !claimedFirst(o, t) {
			continue
		}
		if holder != nil && claimedFirst(holder, o) {
			continue
		}
		key, err := r.repositoryOf(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Spec.ProviderRef.Name}, keys)
		if err != nil {
			return nil, err
		}
		if key == repository {
			holder = o
		}
	}
	return holder, nil
}

// repositoryOf is the RepositoryKey of a GitProvider's URL, "" when it
// does not exist; keys memoizes the lookups of one check.
func (r *GitTargetReconciler) repositoryOf(ctx context.Context, provider client.ObjectKey, keys map[client.ObjectKey]string) (string, error) {
	if key, ok := keys[provider]; ok {
		return key, nil
	}
	var gp v1alpha3.GitProvider
	err := r.Client.Get(ctx, provider, &gp)
	switch {
	case apierrors.IsNotFound(err):
		keys[provider] = ""
	case err != nil:
		return "", fmt.Errorf("reading GitProvider %s to check path overlap: %w", provider, err)
	default:
		keys[provider] = forgeconn.RepositoryKey(gp.Spec.URL)
	}
	return keys[provider], nil
}

// pathOverlapMessage says who keeps the path and what the user can do:
// spec.path, spec.branch and spec.providerRef are immutable, so the way out
// is a new GitTarget.
func pathOverlapMessage(t, holder *v1alpha3.GitTarget) string {
	return fmt.Sprintf("path %q overlaps path %q of GitTarget %s/%s, which writes the same repository and branch and is older, so it keeps the path; "+
		"spec.path is immutable: delete this GitTarget and create it again with a path outside %q, or delete %s/%s",
		t.Spec.Path, holder.Spec.Path, holder.Namespace, holder.Name, holder.Spec.Path, holder.Namespace, holder.Name)
}

// pathsOverlap reports whether one path contains the other. "." contains
// everything.
func pathsOverlap(a, b string) bool {
	if a == "." || b == "." || a == b {
		return true
	}
	return strings.HasPrefix(a, b+"/") || strings.HasPrefix(b, a+"/")
}

// claimedFirst decides which of two overlapping targets keeps the path: the
// older one, by creation time, then by namespace and name, so the decision
// is stable and the same from both sides.
func claimedFirst(other, t *v1alpha3.GitTarget) bool {
	ot, tt := other.CreationTimestamp, t.CreationTimestamp
	if !ot.Equal(&tt) {
		return ot.Before(&tt)
	}
	if other.Namespace != t.Namespace {
		return other.Namespace < t.Namespace
	}
	return other.Name < t.Name
}

// targetsOverlapping maps a deleted GitTarget to the targets whose paths
// overlap its own on its branch, in any namespace: one of them may now
// keep the path. Repositories are not compared here (the deleted target's
// provider may be gone too); each target's reconcile decides.
func (r *GitTargetReconciler) targetsOverlapping(ctx context.Context, obj client.Object) []reconcile.Request {
	gone, ok := obj.(*v1alpha3.GitTarget)
	if !ok {
		return nil
	}
	return r.targetsWhere(ctx, nil, func(t *v1alpha3.GitTarget) bool {
		return (t.Namespace != gone.Namespace || t.Name != gone.Name) &&
			t.Spec.Branch == gone.Spec.Branch && pathsOverlap(t.Spec.Path, gone.Spec.Path)
	})
}

// targetsOfRepository maps a GitProvider to every GitTarget writing its
// repository, through it or through another GitProvider in any namespace:
// a provider that appears lets its older targets claim their paths back,
// so the younger ones on the same repository must be checked again.
func (r *GitTargetReconciler) targetsOfRepository(ctx context.Context, obj client.Object) []reconcile.Request {
	gp, ok := obj.(*v1alpha3.GitProvider)
	if !ok {
		return nil
	}
	repository := forgeconn.RepositoryKey(gp.Spec.URL)
	var providers v1alpha3.GitProviderList
	if err := r.Client.List(ctx, &providers); err != nil {
		return r.targetsOfProvider(ctx, obj)
	}
	same := map[client.ObjectKey]bool{{Namespace: gp.Namespace, Name: gp.Name}: true}
	for i := range providers.Items {
		p := &providers.Items[i]
		if forgeconn.RepositoryKey(p.Spec.URL) == repository {
			same[client.ObjectKey{Namespace: p.Namespace, Name: p.Name}] = true
		}
	}
	return r.targetsWhere(ctx, nil, func(t *v1alpha3.GitTarget) bool {
		return same[client.ObjectKey{Namespace: t.Namespace, Name: t.Spec.ProviderRef.Name}]
	})
}
