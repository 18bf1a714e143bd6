package controller

import (
	"context"
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/branch"
	"github.com/configbutler/gitops-reverser/internal/engine"
)

// GitTargetReconciler validates a GitTarget, resolves its rules to claims
// and has the engine mirror it; its status joins the control-plane checks
// with the engine's runtime state.
type GitTargetReconciler struct {
	Client ctrl.Client
	// SecretReader reads credentials and kubeconfig Secrets uncached (the
	// manager's APIReader), so Secret values never sit in the cache.
	SecretReader ctrl.Reader
	// Metadata reads object metadata from the manager's cache (the
	// resourceVersions of the Secrets and ConfigMaps the provider
	// controllers watch), so an unchanged reconcile reads no Secret; nil
	// reads every Secret on every reconcile.
	Metadata ctrl.Reader
	// CredentialNamespaces, when set, are the namespaces whose Secrets the
	// operator may read; a target elsewhere is Stalled with
	// SecretNamespaceNotGranted. nil is every namespace.
	CredentialNamespaces []string
	Engine               *engine.Engine
	// EveryReplica runs the controller on every replica, not the elected
	// one only: with several replicas each runs the GitTargets of the
	// branches it owns.
	EveryReplica bool
	// NoteClaimsElsewhere compiles the claims of the GitTargets other
	// replicas run, for the admission observer's registration
	// (noteClaimsElsewhere); set with several replicas and the observer on.
	NoteClaimsElsewhere bool
	// LocalConfig is the operator's own cluster, the source of a
	// ClusterProvider without a kubeConfig.
	LocalConfig *rest.Config
	// OperatorNamespace holds remote kubeconfig Secrets.
	OperatorNamespace string
	// Events, when set, records a Warning Event for each object the operator
	// refuses to write, and an Event for each change of the summary.
	Events events.EventRecorder
	// ResyncInterval re-checks a healthy target (rules resolved against a
	// changed API surface, provider readiness).
	ResyncInterval time.Duration
}

// targetRun carries one reconcile's state between its steps.
type targetRun struct {
	target   *v1alpha3.GitTarget
	conds    *targetConditions
	provider *v1alpha3.GitProvider
	// pullRequest is the worker's pull-request settings, nil in direct
	// mode (checkPullRequest).
	pullRequest *branch.PullRequestSettings
	source      *engine.Source
	spec        engine.TargetSpec
	requeue     time.Duration
}

// errStop ends a reconcile early: a step has set conditions that explain
// why, and nothing further can succeed until something changes.
var errStop = errors.New("stop")

// statusConflictRetry is how soon a reconcile whose status patch met a
// newer object runs again.
const statusConflictRetry = 100 * time.Millisecond

// Reconcile runs the steps in order; status is patched once, at the end.
func (r *GitTargetReconciler) Reconcile(ctx context.Context, req reconcile.Request) (res reconcile.Result, err error) {
	var target v1alpha3.GitTarget
	if err := r.Client.Get(ctx, req.NamespacedName, &target); err != nil {
		if apierrors.IsNotFound(err) {
			r.Engine.ForgetTarget(branch.TargetKey{Namespace: req.Namespace, Name: req.Name})
			r.Engine.RemoveTarget(ctx, branch.TargetKey{Namespace: req.Namespace, Name: req.Name})
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	if !target.DeletionTimestamp.IsZero() {
		r.Engine.ForgetTarget(keyOf(&target))
		r.Engine.RemoveTarget(ctx, keyOf(&target))
		return reconcile.Result{}, nil
	}
	// With several replicas, the one owning the target's branch runs it and
	// alone writes its status; the engine reconciles it again here when
	// this replica takes the branch.
	r.Engine.NoteTarget(keyOf(&target), branchOf(&target))
	if !r.Engine.Owns(branchOf(&target)) {
		r.Engine.StopMoved(ctx, keyOf(&target), branchOf(&target))
		return r.noteClaimsElsewhere(ctx, &target)
	}
	run := &targetRun{target: &target, conds: newTargetConditions(&target.Status.Conditions, target.Generation), requeue: r.resync()}
	run.conds.suspended = target.Spec.Suspend
	base := target.DeepCopy()
	skipStatus := false
	defer func() {
		if skipStatus {
			return
		}
		target.Status.ObservedGeneration = target.Generation
		run.conds.summarize()
		if perr := patchTargetStatus(ctx, r.Client, base, &target); perr != nil {
			if apierrors.IsConflict(perr) && err == nil {
				// The cache had not seen this reconcile's previous write yet: a
				// patch against that stale copy could leave the newer status
				// standing. Run again on the fresh object.
				res = reconcile.Result{RequeueAfter: statusConflictRetry}
				return
			}
			// A lost status write is retried with the queue's backoff, not
			// left until the next resync; a step's own error stays with it.
			res, err = reconcile.Result{}, errors.Join(err, perr)
			return
		}
		announceTransition(r.Events, &target, base.Status.Conditions, target.Status.Conditions)
	}()
	for _, step := range []func(context.Context, *targetRun) error{
		r.suspend, r.validateProvider, r.checkSecretNamespace, r.validateBranchAndPath, r.connectSource, r.providerReady,
		r.workerSettings, r.resolveRules, r.encryption, r.mirror, r.reportRuntime,
	} {
		if err := step(ctx, run); err != nil {
			if errors.Is(err, errStop) {
				return reconcile.Result{RequeueAfter: run.requeue}, nil
			}
			if errors.Is(err, engine.ErrNotOwner) {
				// Released while this reconcile ran: the new owner writes the
				// status.
				skipStatus = true
				return reconcile.Result{}, nil
			}
			if errors.Is(err, engine.ErrNotStarted) {
				// The engine reconciles the target again once it starts; the
				// requeue is the fallback.
				r.Engine.RetryWhenStarted(keyOf(&target))
				return reconcile.Result{RequeueAfter: time.Second}, nil
			}
			return reconcile.Result{}, err
		}
	}
	return reconcile.Result{RequeueAfter: run.requeue}, nil
}

func (r *GitTargetReconciler) resync() time.Duration {
	if r.ResyncInterval > 0 {
		return r.ResyncInterval
	}
	return 30 * time.Second
}

func keyOf(t *v1alpha3.GitTarget) branch.TargetKey {
	return branch.TargetKey{Namespace: t.Namespace, Name: t.Name}
}

// branchOf is the branch worker a GitTarget writes through: its GitProvider
// (in its namespace) and the branch it writes, the head branch in mode
// PullRequest.
func branchOf(t *v1alpha3.GitTarget) branch.Key {
	return branch.Key{ProviderNamespace: t.Namespace, Provider: t.Spec.ProviderRef.Name, Branch: t.HeadBranch()}
}
