package controller

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/internal/signing"
)

// Generating a signing key writes the Secret spec.commit.signing.secretRef
// names: create when it does not exist, update to add the key to it.
// +kubebuilder:rbac:groups="",resources=secrets,verbs=create;update

// signingHold is why Ready is held back for signing while every other check
// passed: commits would have to be made unsigned, so none are made.
type signingHold struct {
	reason, message string
	// err, when set, is a failure worth retrying with backoff
	// (Reconciling); without it a human must act (Stalled).
	err error
}

// ensureSigningKey makes the signing key available when spec.commit.signing
// is set, and reports it in SigningKeyReady and status.signingPublicKey:
//
//   - the key exists, or was generated into the Secret because
//     generateWhenMissing is set → True, Succeeded; signingPublicKey is its
//     public half;
//   - the Secret or key is missing and generateWhenMissing is false, or
//     the operator may not write the Secret → False, SigningKeyMissing;
//   - the key cannot sign (not a private key, a passphrase) → False,
//     SigningKeyInvalid; it is never replaced;
//   - the API server failed → Unknown, Progressing, retried with backoff.
//
// Without signing configured the condition and the public key are removed.
// A failure does not end the reconcile, so the other conditions stay
// current; it holds Ready back at the end (finish).
func (r *GitProviderReconciler) ensureSigningKey(ctx context.Context, run *providerRun) (bool, ctrl.Result, error) {
	provider := run.provider
	spec := provider.Spec.Commit.Signing
	if spec == nil {
		run.conditions.remove(v1alpha3.ConditionSigningKeyReady)
		provider.Status.SigningPublicKey = ""
		return proceed()
	}
	comment := fmt.Sprintf("gitops-reverser %s/%s", provider.Namespace, provider.Name)
	key, err := signing.Ensure(ctx, r.SecretReader, r.Client, provider.Namespace, *spec, comment)
	if err != nil {
		run.holdSigning(signingFailure(provider, err))
		return proceed()
	}
	if key.Generated {
		ctrl.LoggerFrom(ctx).Info("generated a commit signing key", "fingerprint", key.Signer.Fingerprint())
	}
	provider.Status.SigningPublicKey = key.Signer.PublicKey()
	name, field := signing.Ref(*spec)
	run.conditions.set(v1alpha3.ConditionSigningKeyReady, metav1.ConditionTrue, v1alpha3.ReasonSucceeded,
		fmt.Sprintf("commits are signed with the key in Secret %s/%s (%s), %s",
			provider.Namespace, name, field, key.Signer.Fingerprint()))
	return proceed()
}

// signingFailure sorts a failure to get the signing key by who can fix it.
func signingFailure(provider *v1alpha3.GitProvider, err error) (metav1.ConditionStatus, signingHold) {
	switch {
	case errors.Is(err, signing.ErrKeyInvalid):
		return metav1.ConditionFalse, signingHold{reason: v1alpha3.ReasonSigningKeyInvalid,
			message: err.Error() + "; replace it with an SSH private key without a passphrase, or delete the key to have one generated"}
	case errors.Is(err, signing.ErrKeyMissing):
		return metav1.ConditionFalse, signingHold{reason: v1alpha3.ReasonSigningKeyMissing,
			message: err.Error() + "; create it (see docs/signing.md) or set spec.commit.signing.generateWhenMissing"}
	case apierrors.IsForbidden(err):
		name, _ := signing.Ref(*provider.Spec.Commit.Signing)
		return metav1.ConditionFalse, signingHold{reason: v1alpha3.ReasonSigningKeyMissing, message: fmt.Sprintf(
			"the operator may not read or write Secret %s/%s: %v; reading needs get on secrets, generating a key "+
				"create and update (Helm: rbac.generateSigningKeys=true), or create the key yourself", provider.Namespace, name, err)}
	}
	return metav1.ConditionUnknown, signingHold{reason: v1alpha3.ReasonProgressing,
		message: "reading the signing key: " + err.Error(), err: err}
}

// holdSigning records a signing failure: SigningKeyReady says why, and the
// public key is cleared unless the failure was the API server's (the key may
// well still be there).
func (run *providerRun) holdSigning(status metav1.ConditionStatus, hold signingHold) {
	run.conditions.set(v1alpha3.ConditionSigningKeyReady, status, hold.reason, hold.message)
	if hold.err == nil {
		run.provider.Status.SigningPublicKey = ""
	}
	run.signing = &hold
}

// checkForgeSignatures refuses signing on a forge whose API cannot carry a
// commit signature (forges.CarriesSignatures): SigningKeyReady=False,
// SigningUnsupported, and Ready held back, so GitTargets commit nothing
// rather than commit unsigned. The public key stays in status: the key is
// fine, the forge is not.
func (r *GitProviderReconciler) checkForgeSignatures(_ context.Context, run *providerRun) (bool, ctrl.Result, error) {
	if run.provider.Spec.Commit.Signing == nil || forges.CarriesSignatures(run.forge) {
		return proceed()
	}
	hold := signingHold{reason: v1alpha3.ReasonSigningUnsupported, message: fmt.Sprintf(
		"the %s forge's API cannot carry a commit signature, so nothing is committed: use forge.type git "+
			"(which pushes signed commits over the Git protocol) or remove spec.commit.signing",
		run.provider.Status.Forge)}
	run.conditions.set(v1alpha3.ConditionSigningKeyReady, metav1.ConditionFalse, hold.reason, hold.message)
	run.signing = &hold
	return proceed()
}

// finish ends a reconcile whose checks all passed: Ready, unless signing
// holds it back.
func (r *GitProviderReconciler) finish(run *providerRun) (ctrl.Result, error) {
	recheck := ctrl.Result{RequeueAfter: r.recheckInterval()}
	hold := run.signing
	switch {
	case hold == nil:
		run.markReady()
		return recheck, nil
	case hold.err != nil:
		run.conditions.markReconciling(hold.reason, hold.message)
		provider := run.provider
		return ctrl.Result{}, fmt.Errorf("reading the signing key of GitProvider %s/%s: %w", provider.Namespace, provider.Name, hold.err)
	}
	run.conditions.markStalled(hold.reason, hold.message)
	return recheck, nil
}
