package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
)

// grantHint says how to give the operator a namespace's Secrets.
func grantHint(namespace string) string {
	return fmt.Sprintf("with the chart, add %s to rbac.credentialNamespaces (or set rbac.clusterWideSecrets=true); "+
		"without it, add %s to --credential-namespaces and grant get, list and watch on secrets there", namespace, namespace)
}

// secretsReadable is false when credentialNamespaces is set and does not
// hold namespace: the operator neither watches nor may read its Secrets.
func secretsReadable(credentialNamespaces []string, namespace string) bool {
	return credentialNamespaces == nil || slices.Contains(credentialNamespaces, namespace)
}

// notGrantedMessage says that the Secrets of namespace, which what reads,
// are not given to the operator, and how to give them.
func notGrantedMessage(namespace, what string) string {
	return fmt.Sprintf("the operator is not given the Secrets of namespace %s, where %s: %s",
		namespace, what, grantHint(namespace))
}

// checkSecretNamespace stops a provider whose Secrets live in a namespace
// the operator was not given (CredentialNamespaces): Stalled, reason
// SecretNamespaceNotGranted, the message names the namespace and the chart
// value. Reading them would be refused, and a rotation would go unseen.
// Only a restart with the namespace added helps, which reconciles anew.
func (r *GitProviderReconciler) checkSecretNamespace(_ context.Context, run *providerRun) (bool, ctrl.Result, error) {
	provider := run.provider
	if !readsSecrets(provider) || secretsReadable(r.CredentialNamespaces, provider.Namespace) {
		return proceed()
	}
	run.stall(metav1.ConditionUnknown, v1alpha3.ReasonSecretNamespaceNotGranted,
		notGrantedMessage(provider.Namespace, "this GitProvider's credentials are"))
	return stopped()
}

// checkSecretNamespace blocks a GitTarget that reads Secrets (its age key,
// or its provider's credentials and signing key, all in its namespace) in
// a namespace the operator was not given (CredentialNamespaces):
// Validated=False, reason SecretNamespaceNotGranted (Stalled), the message
// names the namespace and the chart value; the target is not mirrored. It
// runs after validateProvider, which loads the provider.
func (r *GitTargetReconciler) checkSecretNamespace(ctx context.Context, run *targetRun) error {
	t := run.target
	if !targetReadsSecrets(t, run.provider) || secretsReadable(r.CredentialNamespaces, t.Namespace) {
		return nil
	}
	r.Engine.RemoveTarget(ctx, keyOf(t))
	run.conds.block(v1alpha3.ConditionValidated, v1alpha3.ReasonSecretNamespaceNotGranted,
		notGrantedMessage(t.Namespace, "this GitTarget's credentials and keys are"))
	return errStop
}

// secretForbidden records a refused read of the provider's Secret: the
// RBAC lacks get in its namespace. Nothing in Kubernetes that the operator
// watches changes when a grant is added, so it is asked again every
// RecheckInterval.
func (r *GitProviderReconciler) secretForbidden(run *providerRun, err error) (bool, ctrl.Result, error) {
	ns := run.provider.Namespace
	run.stall(metav1.ConditionUnknown, v1alpha3.ReasonSecretNamespaceNotGranted, fmt.Sprintf(
		"the operator may not read Secrets in namespace %s: %s. The API server said: %v", ns, grantHint(ns), err))
	return true, ctrl.Result{RequeueAfter: r.recheckInterval()}, nil
}

// readsSecrets is true when the provider references a Secret (credentials,
// known_hosts or signing key); a ConfigMap knownHostsRef alone needs none.
func readsSecrets(provider *v1alpha3.GitProvider) bool {
	return slices.ContainsFunc(credentialReferences(provider), func(ref string) bool {
		return strings.HasPrefix(ref, referenceIndexValue(kindSecret, ""))
	})
}

// targetReadsSecrets is true when the target has an age key Secret or its
// provider references a Secret.
func targetReadsSecrets(t *v1alpha3.GitTarget, provider *v1alpha3.GitProvider) bool {
	if e := t.Spec.Encryption; e != nil && e.Age.SecretRef != nil {
		return true
	}
	return readsSecrets(provider)
}
