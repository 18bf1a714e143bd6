package controller

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/internal/credentials"
	"github.com/configbutler/gitops-reverser/internal/forgeconn"
	"github.com/configbutler/gitops-reverser/internal/redact"
)

// Defaults of GitProviderReconciler's tunables.
const (
	// defaultProbeTimeout bounds one reachability probe. An SSH dial has its
	// own 30s bound inside the git forge; this covers the whole exchange.
	defaultProbeTimeout = 45 * time.Second
	// defaultProviderRecheckInterval re-probes a provider that needs nothing
	// from Kubernetes to change state: a Ready one whose remote may go away,
	// and a refused one whose remote side (a deploy key, a permission) may
	// be fixed where no watch can see it.
	defaultProviderRecheckInterval = 5 * time.Minute
)

// +kubebuilder:rbac:groups=configbutler.ai,resources=gitproviders,verbs=get;list;watch
// +kubebuilder:rbac:groups=configbutler.ai,resources=gitproviders/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=secrets;configmaps,verbs=get;list;watch

// GitProviderReconciler checks that a GitProvider can be written: its
// signing key exists (generated when asked) and its forge can carry
// signatures, its credentials exist and fit its URL, its forge is
// supported, its commit message templates parse, and the repository
// answers with the credentials. The result is the provider's conditions,
// which GitTargets gate on.
type GitProviderReconciler struct {
	// Client reads GitProviders (from the manager's cache) and patches their
	// status.
	Client client.Client
	// SecretReader reads credentials Secrets and known_hosts objects. It
	// should be the manager's APIReader: the controller only watches Secret
	// metadata, so Secret values never sit in the operator's cache.
	SecretReader client.Reader
	// CredentialNamespaces, when set, are the namespaces whose Secrets the
	// operator watches and may read; a provider elsewhere is Stalled with
	// SecretNamespaceNotGranted. nil is every namespace.
	CredentialNamespaces []string
	// ForgeTransport, when set, wraps the API forges' HTTP transport, so the
	// probe's requests are counted with every other forge request. It is
	// asked once for each forge client opened, whatever the forge.
	ForgeTransport func(forge string, count *atomic.Int64) http.RoundTripper
	// Pacers, when set, are the GitTargets' (GitTargetReconciler.Pacers):
	// the probe's client then shares GitHub's secondary-limit pacing with
	// the branch workers, and status.rateLimit shows what they spent.
	Pacers *forgeconn.Pacers
	// Budgets, when set, receives a metered forge's remaining request budget.
	Budgets interface {
		SetBudget(forge, namespace, provider string, remaining int)
	}
	// ProbeTimeout bounds one reachability probe; zero means 45s.
	ProbeTimeout time.Duration
	// RecheckInterval is how often a provider is probed again with no
	// Kubernetes change; zero means 5m.
	RecheckInterval time.Duration
	// BudgetRefreshDelay is how long after a GitTarget's commit its
	// provider is probed to refresh status.rateLimit; the commits of that
	// interval share one probe. Zero means 15s.
	BudgetRefreshDelay time.Duration
	// Events, when set, records an Event for each change of the summary
	// (Ready, Stalled), for kubectl describe.
	Events events.EventRecorder
}

// providerRun is one reconcile's state, handed from step to step.
type providerRun struct {
	provider   *v1alpha3.GitProvider
	conditions conditionSet
	creds      credentials.Credentials
	forge      forges.Forge
	// signing, when set, holds Ready back once every other check passed.
	signing *signingHold
}

// providerStep is one check of a reconcile. done ends the reconcile: the
// step has set conditions that say why, and result (or err, for a retry
// with backoff) says when to come back.
type providerStep func(ctx context.Context, run *providerRun) (done bool, result ctrl.Result, err error)

// Reconcile runs the steps in order until one ends the reconcile. The
// status is written once, in a deferred merge patch, whatever step ended it.
func (r *GitProviderReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, err error) {
	provider := &v1alpha3.GitProvider{}
	if err := r.Client.Get(ctx, req.NamespacedName, provider); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !provider.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	base := provider.DeepCopy()
	defer func() {
		err = errors.Join(err, r.patchStatus(ctx, base, provider))
	}()
	provider.Status.ObservedGeneration = provider.Generation
	provider.Status.Forge = forgeconn.ForgeType(provider.Spec)
	run := &providerRun{provider: provider, conditions: newConditionSet(&provider.Status.Conditions, provider.Generation)}
	steps := []providerStep{
		r.checkSecretNamespace, r.ensureSigningKey, r.readCredentials, r.openForge, r.checkForgeSignatures, r.parseMessageTemplates,
		r.probeRepository,
	}
	for _, step := range steps {
		done, stepResult, stepErr := step(ctx, run)
		if done || stepErr != nil {
			return stepResult, stepErr
		}
	}
	// Come back to notice a remote that went away or credentials revoked
	// on the forge; neither changes anything in Kubernetes.
	return r.finish(run)
}

// patchStatus writes the status with one merge patch against what was
// read, and skips the request when nothing changed.
func (r *GitProviderReconciler) patchStatus(ctx context.Context, base, provider *v1alpha3.GitProvider) error {
	if equality.Semantic.DeepEqual(base.Status, provider.Status) {
		return nil
	}
	err := r.Client.Status().Patch(ctx, provider, client.MergeFrom(base))
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("patching the status of GitProvider %s/%s: %w", provider.Namespace, provider.Name, err)
	}
	announceTransition(r.Events, provider, base.Status.Conditions, provider.Status.Conditions)
	return nil
}

func (r *GitProviderReconciler) probeTimeout() time.Duration {
	if r.ProbeTimeout > 0 {
		return r.ProbeTimeout
	}
	return defaultProbeTimeout
}

func (r *GitProviderReconciler) recheckInterval() time.Duration {
	if r.RecheckInterval > 0 {
		return r.RecheckInterval
	}
	return defaultProviderRecheckInterval
}

// stall and retry hide spec.url's password (refused by the schema today,
// but one stored before may still be there) wherever a library quoted it.
//
// stall records a problem only a human can fix: Ready=False, Stalled=True,
// and RepositoryReachable says what is known about the remote (Unknown
// before it was contacted, False after it refused). The step then ends the
// reconcile without an error, since retrying as is cannot help: the
// watches bring the provider back when its spec or a referenced Secret
// changes, and a refusal by the remote is re-probed every RecheckInterval.
func (run *providerRun) stall(reachable metav1.ConditionStatus, reason, message string) {
	message = redact.Text(message, run.provider.Spec.URL)
	run.conditions.set(v1alpha3.ConditionRepositoryReachable, reachable, reason, message)
	run.conditions.markStalled(reason, message)
}

// retry records a problem expected to clear by itself: Ready=False,
// Reconciling=True.
func (run *providerRun) retry(reachable metav1.ConditionStatus, reason, message string) {
	message = redact.Text(message, run.provider.Spec.URL)
	run.conditions.set(v1alpha3.ConditionRepositoryReachable, reachable, reason, message)
	run.conditions.markReconciling(reason, message)
}

// markReady records that every check passed: RepositoryReachable was set
// by the probe; Ready=True, Stalled=False, Reconciling=False.
func (run *providerRun) markReady() {
	run.conditions.markReady(v1alpha3.ReasonSucceeded, "the repository answers with the configured credentials")
}

// stopped is a step's "end the reconcile here" with no requeue of its own.
func stopped() (bool, ctrl.Result, error) { return true, ctrl.Result{}, nil }

// proceed is a step's "go on to the next step".
func proceed() (bool, ctrl.Result, error) { return false, ctrl.Result{}, nil }
