package controller

import (
	"context"
	"fmt"
	"path"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
)

// suspend stops a suspended target's writes before anything else: the
// later steps may stop before mirror hands the engine the new spec (its
// GitProvider not Ready, say). Ready then says Suspended (summarize).
func (r *GitTargetReconciler) suspend(_ context.Context, run *targetRun) error {
	if !run.target.Spec.Suspend {
		return nil
	}
	if err := r.Engine.SuspendTarget(keyOf(run.target)); err != nil {
		return fmt.Errorf("suspending GitTarget %s/%s: %w", run.target.Namespace, run.target.Name, err)
	}
	return nil
}

// validateProvider sets Validated=False/GitProviderNotFound (Stalled) when
// spec.providerRef names no GitProvider.
func (r *GitTargetReconciler) validateProvider(ctx context.Context, run *targetRun) error {
	t := run.target
	var gp v1alpha3.GitProvider
	err := r.Client.Get(ctx, ctrl.ObjectKey{Namespace: t.Namespace, Name: t.Spec.ProviderRef.Name}, &gp)
	if apierrors.IsNotFound(err) {
		r.Engine.RemoveTarget(ctx, keyOf(t))
		run.conds.block(v1alpha3.ConditionValidated, v1alpha3.ReasonGitProviderNotFound,
			fmt.Sprintf("GitProvider %s/%s does not exist; create it, or, since spec.providerRef is immutable, "+
				"delete this GitTarget and create it again naming an existing GitProvider", t.Namespace, t.Spec.ProviderRef.Name))
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
// when an older GitTarget whose files land on the same branch of the
// repository (sameDestination: in pull-request mode the base counts), in
// any namespace and through any GitProvider, owns an overlapping path (both
// Stalled), True otherwise.
func (r *GitTargetReconciler) validateBranchAndPath(ctx context.Context, run *targetRun) error {
	t := run.target
	if !branchAllowed(t.HeadBranch(), run.provider.Spec.AllowedBranches) {
		r.Engine.RemoveTarget(ctx, keyOf(t))
		run.conds.block(v1alpha3.ConditionValidated, v1alpha3.ReasonBranchNotAllowed, branchNotAllowedMessage(t, run.provider))
		return errStop
	}
	if err := r.checkPullRequest(ctx, run); err != nil {
		return err
	}
	holder, err := r.pathHolder(ctx, t, run.provider)
	if err != nil {
		return err
	}
	if holder != nil {
		r.Engine.RemoveTarget(ctx, keyOf(t))
		run.conds.block(v1alpha3.ConditionValidated, v1alpha3.ReasonPathOverlap, pathOverlapMessage(t, holder))
		return errStop
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
