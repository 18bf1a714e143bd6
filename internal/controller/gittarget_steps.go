package controller

import (
	"context"
	"fmt"
	"path"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
)

// validateProvider sets Validated=False/GitProviderNotFound (Stalled) when
// spec.providerRef names no GitProvider.
func (r *GitTargetReconciler) validateProvider(ctx context.Context, run *targetRun) error {
	t := run.target
	var gp v1alpha3.GitProvider
	err := r.Client.Get(ctx, ctrl.ObjectKey{Namespace: t.Namespace, Name: t.Spec.ProviderRef.Name}, &gp)
	if apierrors.IsNotFound(err) {
		r.Engine.RemoveTarget(ctx, keyOf(t))
		run.conds.block(v1alpha3.ConditionValidated, v1alpha3.ReasonGitProviderNotFound,
			fmt.Sprintf("GitProvider %s/%s does not exist; create it or fix spec.providerRef", t.Namespace, t.Spec.ProviderRef.Name))
		return errStop
	}
	if err != nil {
		return fmt.Errorf("reading GitProvider %s: %w", t.Spec.ProviderRef.Name, err)
	}
	run.provider = &gp
	return nil
}

// validateBranchAndPath sets Validated: False/BranchNotAllowed when the
// branch matches none of the provider's allowedBranches, False/PathOverlap
// when an older GitTarget on the same provider and branch owns an
// overlapping path (both Stalled), True otherwise.
func (r *GitTargetReconciler) validateBranchAndPath(ctx context.Context, run *targetRun) error {
	t := run.target
	if !branchAllowed(t.Spec.Branch, run.provider.Spec.AllowedBranches) {
		r.Engine.RemoveTarget(ctx, keyOf(t))
		run.conds.block(v1alpha3.ConditionValidated, v1alpha3.ReasonBranchNotAllowed,
			fmt.Sprintf("branch %q matches none of GitProvider %s's allowedBranches %v", t.Spec.Branch, run.provider.Name, run.provider.Spec.AllowedBranches))
		return errStop
	}
	var others v1alpha3.GitTargetList
	if err := r.Client.List(ctx, &others, ctrl.InNamespace(t.Namespace)); err != nil {
		return fmt.Errorf("listing GitTargets to check path overlap: %w", err)
	}
	for i := range others.Items {
		o := &others.Items[i]
		if o.Name == t.Name || o.Spec.ProviderRef.Name != t.Spec.ProviderRef.Name || o.Spec.Branch != t.Spec.Branch {
			continue
		}
		if pathsOverlap(o.Spec.Path, t.Spec.Path) && claimedFirst(o, t) {
			r.Engine.RemoveTarget(ctx, keyOf(t))
			run.conds.block(v1alpha3.ConditionValidated, v1alpha3.ReasonPathOverlap,
				fmt.Sprintf("path %q overlaps path %q of GitTarget %s on the same provider and branch; choose a path outside it", t.Spec.Path, o.Spec.Path, o.Name))
			return errStop
		}
	}
	run.conds.setBool(v1alpha3.ConditionValidated, true, v1alpha3.ReasonSucceeded, "provider, branch and path are valid")
	return nil
}

// branchAllowed matches a branch against glob patterns (path.Match).
func branchAllowed(branch string, patterns []string) bool {
	for _, p := range patterns {
		if ok, err := path.Match(p, branch); err == nil && ok {
			return true
		}
	}
	return false
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
// older one, by creation time, then by name, so the decision is stable and
// the same from both sides.
func claimedFirst(other, t *v1alpha3.GitTarget) bool {
	ot, tt := other.CreationTimestamp, t.CreationTimestamp
	if !ot.Equal(&tt) {
		return ot.Before(&tt)
	}
	return other.Name < t.Name
}
