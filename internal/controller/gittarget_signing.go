package controller

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
)

// stopWhenSigningUnavailable stops mirroring the target while its provider
// requires signatures and cannot make them (the key was deleted or broken,
// or signing was just turned on for a forge that cannot carry them). A
// provider that is not Ready stops the reconcile before the worker is
// rebuilt, so without this the worker built from an earlier spec or key
// would keep committing; fail closed instead. Once the provider is Ready
// again the target is applied anew and its replay commits what changed.
func (r *GitTargetReconciler) stopWhenSigningUnavailable(ctx context.Context, run *targetRun) {
	gp := run.provider
	if gp.Spec.Commit.Signing == nil {
		return
	}
	ready := meta.FindStatusCondition(gp.Status.Conditions, v1alpha3.ConditionSigningKeyReady)
	// Unknown is the API server failing to read the key, not the key
	// gone: the running worker still signs with the key it has.
	if ready == nil || ready.ObservedGeneration != gp.Generation || ready.Status != metav1.ConditionFalse {
		return
	}
	r.Engine.RemoveTarget(ctx, keyOf(run.target))
}

// signingKeyChanged admits a GitProvider whose status.signingPublicKey
// changed: the key was rotated, and the targets rebuild their workers with
// it now rather than at their next resync.
func signingKeyChanged() predicate.Predicate {
	return updatedWhere(func(before, after *v1alpha3.GitProvider) bool {
		return before.Status.SigningPublicKey != after.Status.SigningPublicKey
	})
}
