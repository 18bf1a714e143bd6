package controller

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/internal/branch"
	"github.com/configbutler/gitops-reverser/internal/credentials"
	"github.com/configbutler/gitops-reverser/internal/forgeconn"
	"github.com/configbutler/gitops-reverser/internal/redact"
)

// readCredentials reads spec.secretRef and spec.knownHostsRef.
//
//   - a referenced Secret/ConfigMap or key is missing → Stalled,
//     reason SecretNotFound, the message names namespace/name; creating it
//     re-reconciles through the Secret watch;
//   - a value is malformed → Stalled, reason InvalidCredentials;
//   - RBAC refuses the read → Stalled, reason SecretNamespaceNotGranted,
//     asked again every RecheckInterval;
//   - the API server failed → Reconciling, retried with backoff.
func (r *GitProviderReconciler) readCredentials(ctx context.Context, run *providerRun) (bool, ctrl.Result, error) {
	provider := run.provider
	creds, err := credentials.Read(ctx, r.SecretReader, provider.Namespace, provider.Spec)
	switch {
	case err == nil:
		run.creds = creds
		return proceed()
	case errors.Is(err, credentials.ErrSecretNotFound):
		run.stall(metav1.ConditionUnknown, v1alpha3.ReasonSecretNotFound, err.Error())
		return stopped()
	case errors.Is(err, credentials.ErrInvalidCredentials):
		run.stall(metav1.ConditionUnknown, v1alpha3.ReasonInvalidCredentials, err.Error())
		return stopped()
	case apierrors.IsForbidden(err):
		return r.secretForbidden(run, err)
	}
	run.retry(metav1.ConditionUnknown, v1alpha3.ReasonProgressing, "reading the credentials: "+err.Error())
	return true, ctrl.Result{}, fmt.Errorf("reading the credentials of GitProvider %s/%s: %w", provider.Namespace, provider.Name, err)
}

// openForge builds the forge client for the provider's forge type.
//
//   - a forge without an implementation (github, gitea, gitlab for now) or
//     a URL the client refuses → Stalled, reason InvalidSpec, with a message
//     saying to set spec.forge.type: git;
//   - credentials that cannot work for the URL (an SSH URL without a key or
//     known_hosts) → Stalled, reason InvalidCredentials.
func (r *GitProviderReconciler) openForge(_ context.Context, run *providerRun) (bool, ctrl.Result, error) {
	// "" branch: the provider is checked as a whole; GitTargets open their
	// own forge per branch.
	var rt http.RoundTripper
	if r.ForgeTransport != nil {
		rt = r.ForgeTransport(string(forgeconn.ForgeType(run.provider.Spec)), nil)
	}
	forge, err := r.Pacers.Open(run.provider.Spec, run.creds, rt)
	switch {
	case err == nil:
		run.forge = forge
		return proceed()
	case errors.Is(err, forgeconn.ErrUnusableCredentials):
		run.stall(metav1.ConditionUnknown, v1alpha3.ReasonInvalidCredentials, err.Error())
	default:
		run.stall(metav1.ConditionUnknown, v1alpha3.ReasonInvalidSpec, err.Error())
	}
	return stopped()
}

// parseMessageTemplates compiles spec.commit.message, so a broken template
// shows on the provider instead of failing the first commit of every
// target. Invalid → Stalled, reason InvalidSpec, the message names the
// template.
func (r *GitProviderReconciler) parseMessageTemplates(_ context.Context, run *providerRun) (bool, ctrl.Result, error) {
	templates := run.provider.Spec.Commit.Message
	if templates == nil {
		return proceed()
	}
	if _, err := branch.ParseMessages(templates.EventTemplate, templates.GroupTemplate, templates.ReconcileTemplate); err != nil {
		run.stall(metav1.ConditionUnknown, v1alpha3.ReasonInvalidSpec, "spec.commit.message: "+err.Error())
		return stopped()
	}
	return proceed()
}

// probeRepository asks the remote whether it answers with the credentials,
// under ProbeTimeout. Success sets RepositoryReachable=True; failures are
// sorted by who can fix them (see probeFailed).
func (r *GitProviderReconciler) probeRepository(ctx context.Context, run *providerRun) (bool, ctrl.Result, error) {
	prober, ok := run.forge.(forges.Prober)
	if !ok {
		return true, ctrl.Result{}, fmt.Errorf("the %s forge client %T cannot probe a repository", run.provider.Status.Forge, run.forge)
	}
	probeCtx, cancel := context.WithTimeout(ctx, r.probeTimeout())
	defer cancel()
	err := prober.Probe(probeCtx)
	r.reportBudget(run.provider, run.forge)
	if err != nil {
		return r.probeFailed(run, err)
	}
	run.conditions.set(v1alpha3.ConditionRepositoryReachable, metav1.ConditionTrue, v1alpha3.ReasonSucceeded,
		"the repository answers with the configured credentials")
	return proceed()
}

// probeFailed records a failed probe.
//
//   - unauthorized → Stalled, reason Unauthorized: the credentials were
//     refused;
//   - forbidden → Stalled, reason Forbidden: they lack permission (or an
//     SSH host key did not verify, which the message names);
//   - not found → Stalled, reason RepositoryUnreachable;
//   - rate limited → Reconciling, reason RateLimited, back when the forge
//     said;
//   - anything else (network, timeout, 5xx) → Reconciling, reason
//     RepositoryUnreachable, retried with backoff.
//
// Stalled probes are still re-probed every RecheckInterval, because the fix
// (a deploy key added, a repository created) happens on the remote, where
// no watch sees it.
func (r *GitProviderReconciler) probeFailed(run *providerRun, err error) (bool, ctrl.Result, error) {
	recheck := ctrl.Result{RequeueAfter: r.recheckInterval()}
	url := redact.URL(run.provider.Spec.URL)
	switch forges.KindOf(err) {
	case forges.KindUnauthorized:
		run.stall(metav1.ConditionFalse, v1alpha3.ReasonUnauthorized, refusedMessage(run.provider, err))
		return true, recheck, nil
	case forges.KindForbidden:
		run.stall(metav1.ConditionFalse, v1alpha3.ReasonForbidden, fmt.Sprintf(
			"%s refused access: the credentials lack permission on the repository, or the server's identity did not verify: %v", url, err))
		return true, recheck, nil
	case forges.KindNotFound:
		run.stall(metav1.ConditionFalse, v1alpha3.ReasonRepositoryUnreachable, fmt.Sprintf(
			"repository %s not found: check spec.url, and that the credentials may see it (forges answer not found for private repositories): %v", url, err))
		return true, recheck, nil
	case forges.KindRateLimited:
		run.retry(metav1.ConditionFalse, v1alpha3.ReasonRateLimited, fmt.Sprintf("%s asked to wait: %v", url, err))
		if wait := forges.RetryAfter(err); wait > 0 {
			return true, ctrl.Result{RequeueAfter: wait}, nil
		}
	default:
		run.retry(metav1.ConditionFalse, v1alpha3.ReasonRepositoryUnreachable, fmt.Sprintf("%s did not answer: %v", url, err))
	}
	return true, ctrl.Result{}, fmt.Errorf("probing repository %s: %w", url, err)
}

// refusedMessage says whose credentials were refused, so the user knows
// which Secret to fix, or that one is needed.
func refusedMessage(provider *v1alpha3.GitProvider, err error) string {
	if provider.Spec.SecretRef == nil {
		return fmt.Sprintf("%s requires credentials and spec.secretRef names none: %v", redact.URL(provider.Spec.URL), err)
	}
	return fmt.Sprintf("%s refused the credentials in Secret %s/%s: %v",
		redact.URL(provider.Spec.URL), provider.Namespace, provider.Spec.SecretRef.Name, err)
}

// reportBudget copies a metered forge's request budget into
// status.rateLimit: the primary budget as the probe's response reported
// it, or, when less of it is left, GitHub's secondary limit on content
// creation as the shared pacer counted the workers' requests.
func (r *GitProviderReconciler) reportBudget(provider *v1alpha3.GitProvider, forge forges.Forge) {
	metered, ok := forge.(forges.Budgeter)
	if !ok {
		return
	}
	b, ok := metered.Budget()
	if !ok {
		return
	}
	provider.Status.RateLimit = &v1alpha3.RateLimitStatus{Limit: int64(b.Limit), Remaining: int64(b.Remaining)}
	if r.Budgets != nil {
		r.Budgets.SetBudget(string(provider.Status.Forge), provider.Namespace, provider.Name, b.Remaining)
	}
	if !b.Reset.IsZero() {
		provider.Status.RateLimit.Reset = &metav1.Time{Time: b.Reset}
	}
}
