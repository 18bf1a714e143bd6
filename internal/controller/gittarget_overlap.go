package controller

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/forgeconn"
)

// pathHolder finds the GitTarget that keeps a path overlapping t's: one in
// any namespace, through any GitProvider whose URL names the same
// repository (forgeconn.RepositoryKey), on the same branch, that claimed
// first and holds its path (holdsPath). nil when t may have its path. A
// target whose GitProvider does not exist writes nothing and holds nothing;
// when its provider appears or becomes Ready, the GitProvider watch
// re-checks every target of that repository, and when a target's own
// checks or its first commit change whether it holds, the GitTarget watch
// re-checks the targets overlapping it (pathClaimChanged).
func (r *GitTargetReconciler) pathHolder(ctx context.Context, t *v1alpha3.GitTarget, provider *v1alpha3.GitProvider) (*v1alpha3.GitTarget, error) {
	return r.olderHolder(ctx, t, provider, "path overlap", func(o *v1alpha3.GitTarget) bool {
		return sameDestination(o, t) && pathsOverlap(o.Spec.Path, t.Spec.Path)
	})
}

// sameDestination reports whether two targets' files end up on one branch:
// they write the same branch, or what one writes reaches the other's
// through a pull request (a pull-request target's base is spec.branch,
// where a direct one writes, and where another pull request merges).
// Overlapping paths there would revert each other at every merge.
func sameDestination(a, b *v1alpha3.GitTarget) bool {
	return sharedBranch(a, b) != ""
}

// sharedBranch is the branch both targets' files land on, quoted for a
// message: the one both write, the base a pull request carries one's files
// into, or one's head that is the other's base (a pull request into a
// head). "" when there is none.
func sharedBranch(a, b *v1alpha3.GitTarget) string {
	for _, pair := range [][2]string{
		{a.HeadBranch(), b.HeadBranch()}, {a.Spec.Branch, b.Spec.Branch},
		{a.HeadBranch(), b.Spec.Branch}, {a.Spec.Branch, b.HeadBranch()},
	} {
		if pair[0] == pair[1] {
			return fmt.Sprintf("%q", pair[0])
		}
	}
	return ""
}

// olderHolder finds the oldest GitTarget (claimedFirst) other than t,
// not being deleted, that collides with t and holds (holdsPath) through a
// GitProvider of t's repository, in any namespace; nil when none does.
// check names the check in errors.
func (r *GitTargetReconciler) olderHolder(ctx context.Context, t *v1alpha3.GitTarget, provider *v1alpha3.GitProvider, check string,
	collides func(o *v1alpha3.GitTarget) bool) (*v1alpha3.GitTarget, error) {
	var others v1alpha3.GitTargetList
	if err := r.Client.List(ctx, &others); err != nil {
		return nil, fmt.Errorf("listing GitTargets to check %s: %w", check, err)
	}
	repository := forgeconn.RepositoryKey(provider.Spec.URL)
	providers := map[client.ObjectKey]providerFacts{
		{Namespace: t.Namespace, Name: provider.Name}: {repository: repository, ready: isReady(provider.Status.Conditions)},
	}
	var holder *v1alpha3.GitTarget
	for i := range others.Items {
		o := &others.Items[i]
		if o.Namespace == t.Namespace && o.Name == t.Name || !o.DeletionTimestamp.IsZero() || !collides(o) || !claimedFirst(o, t) {
			continue
		}
		if holder != nil && claimedFirst(holder, o) {
			continue
		}
		facts, err := r.providerOf(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Spec.ProviderRef.Name}, providers)
		if err != nil {
			return nil, err
		}
		if facts.repository == repository && holdsPath(o, facts.ready) {
			holder = o
		}
	}
	return holder, nil
}

// holdsPath decides whether an older GitTarget on the same repository and
// branch keeps its path against younger ones. Only a target that can
// actually write holds, so a GitProvider with credentials that never work
// (another tenant's, pointing at this repository) blocks nobody:
//   - a target refused by its own checks (refusedOnItsOwn) holds nothing,
//     whatever it wrote before: it is out of the engine until a human acts;
//   - a target that has committed (status.lastCommit) holds, even while its
//     GitProvider is not Ready: a provider that blips unready must not hand
//     the path to a younger target, or both would sweep each other's files
//     once it recovers;
//   - any other target holds while its GitProvider is Ready, so a new
//     target keeps its path before its first commit.
//
// GitPathAccepted is no evidence of a past write: providerReady overwrites
// it with GitProviderNotReady during a blip, and status.lastCommit stays.
func holdsPath(o *v1alpha3.GitTarget, providerReady bool) bool {
	if refusedOnItsOwn(o) {
		return false
	}
	return o.Status.LastCommit != nil || providerReady
}

// refusedOnItsOwn: the target's own checks refused it (Validated False:
// GitProviderNotFound, BranchNotAllowed, PathOverlap; ClusterProviderReady
// False: ClusterProviderNotFound, NamespaceNotAllowed, a bad kubeconfig).
// Each of those removes it from the engine, so it writes nothing.
func refusedOnItsOwn(o *v1alpha3.GitTarget) bool {
	for _, typ := range []string{v1alpha3.ConditionValidated, v1alpha3.ConditionClusterProviderReady} {
		if c := meta.FindStatusCondition(o.Status.Conditions, typ); c != nil && c.Status == metav1.ConditionFalse {
			return true
		}
	}
	return false
}

// pathClaimSignal is what holdsPath reads from a target's status; a change
// in it may change who holds a path.
func pathClaimSignal(o *v1alpha3.GitTarget) string {
	var signal string
	for _, typ := range []string{v1alpha3.ConditionValidated, v1alpha3.ConditionClusterProviderReady} {
		if c := meta.FindStatusCondition(o.Status.Conditions, typ); c != nil {
			signal += string(c.Status)
		}
		signal += "/"
	}
	return fmt.Sprintf("%s%t", signal, o.Status.LastCommit != nil)
}

// providerFacts is what a path check needs of a GitProvider: the
// RepositoryKey of its URL ("" when it does not exist) and whether it is
// Ready.
type providerFacts struct {
	repository string
	ready      bool
}

// providerOf reads a GitProvider's facts; known memoizes the lookups of
// one check.
func (r *GitTargetReconciler) providerOf(ctx context.Context, provider client.ObjectKey, known map[client.ObjectKey]providerFacts) (providerFacts, error) {
	if facts, ok := known[provider]; ok {
		return facts, nil
	}
	var gp v1alpha3.GitProvider
	err := r.Client.Get(ctx, provider, &gp)
	switch {
	case apierrors.IsNotFound(err):
		known[provider] = providerFacts{}
	case err != nil:
		return providerFacts{}, fmt.Errorf("reading GitProvider %s to check path overlap: %w", provider, err)
	default:
		known[provider] = providerFacts{repository: forgeconn.RepositoryKey(gp.Spec.URL), ready: isReady(gp.Status.Conditions)}
	}
	return known[provider], nil
}

func isReady(conds []metav1.Condition) bool {
	return meta.IsStatusConditionTrue(conds, v1alpha3.ConditionReady)
}

// pathOverlapMessage says who keeps the path and what the user can do:
// spec.path, spec.branch and spec.providerRef are immutable, so the way out
// is a new GitTarget.
func pathOverlapMessage(t, holder *v1alpha3.GitTarget) string {
	return fmt.Sprintf("path %q overlaps path %q of GitTarget %s/%s, whose files land on the same branch of the repository (%s) and which is older, so it keeps the path; "+
		"spec.path is immutable: delete this GitTarget and create it again with a path outside %q, or delete %s/%s",
		t.Spec.Path, holder.Spec.Path, holder.Namespace, holder.Name, sharedBranch(t, holder), holder.Spec.Path, holder.Namespace, holder.Name)
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

// targetsOverlapping maps a deleted GitTarget, or one whose path claim
// changed (pathClaimChanged), to the targets whose paths overlap its own on
// its branch, in any namespace: one of them may now keep the path, or lose
// it. Repositories are not compared here (the deleted target's provider may
// be gone too); each target's reconcile decides.
func (r *GitTargetReconciler) targetsOverlapping(ctx context.Context, obj client.Object) []reconcile.Request {
	gone, ok := obj.(*v1alpha3.GitTarget)
	if !ok {
		return nil
	}
	return r.targetsWhere(ctx, nil, func(t *v1alpha3.GitTarget) bool {
		return (t.Namespace != gone.Namespace || t.Name != gone.Name) &&
			(sameDestination(t, gone) && pathsOverlap(t.Spec.Path, gone.Spec.Path) ||
				t.HeadBranch() == gone.HeadBranch() && (writesAs(t) != writesAs(gone) || t.Spec.PullRequestMode() && !sameWorker(t, gone)))
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
