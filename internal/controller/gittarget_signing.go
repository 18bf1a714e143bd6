package controller

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/internal/signing"
)

// commitSigner reads the GitProvider's signing key for the branch worker;
// nil without spec.commit.signing. It only reads: generating the key is the
// GitProvider controller's job, and the target waits for that provider to
// be Ready. version is the key Secret's resourceVersion, which goes into the
// worker's fingerprint, so a rotated key replaces the worker.
func (r *GitTargetReconciler) commitSigner(ctx context.Context, gp *v1alpha3.GitProvider, forge forges.Forge) (signer forges.Signer, version string, err error) {
	spec := gp.Spec.Commit.Signing
	if spec == nil {
		return nil, "", nil
	}
	if !forges.CarriesSignatures(forge) {
		return nil, "", fmt.Errorf("spec.commit.signing is set but the %s forge cannot carry a commit signature",
			gp.Status.Forge)
	}
	key, err := signing.Load(ctx, r.SecretReader, gp.Namespace, *spec)
	if err != nil {
		return nil, "", fmt.Errorf("reading the commit signing key: %w", err)
	}
	return key.Signer, key.ResourceVersion, nil
}

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
