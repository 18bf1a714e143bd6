package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/admission"
	"github.com/configbutler/gitops-reverser/internal/attribution"
	"github.com/configbutler/gitops-reverser/internal/branch"
	"github.com/configbutler/gitops-reverser/internal/engine"
)

// Defaults of CommitRequestReconciler's tunables.
const (
	// DefaultCommitRequestRetention is how long a finished CommitRequest is
	// kept before it is deleted.
	DefaultCommitRequestRetention = 24 * time.Hour
	// defaultFinalizeTimeout is how long past its deadline a request waits
	// for its branch worker's answer: a window waiting on the push budget
	// or a conflict replay answers well within it.
	defaultFinalizeTimeout = 10 * time.Minute
	// defaultAttachTimeout is how long past its deadline a request waits for
	// its GitTarget to be mirrored (a target still starting).
	defaultAttachTimeout = 30 * time.Second
)

// +kubebuilder:rbac:groups=configbutler.ai,resources=commitrequests,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=configbutler.ai,resources=commitrequests/status,verbs=get;update;patch

// CommitRequestReconciler finalizes CommitRequests (architecture.md,
// "CommitRequest finalize"): it settles AuthorAttributed from the
// admission webhook's record, hands the request to its GitTarget's branch
// worker, reports the outcome the worker gives, and deletes finished
// requests after Retention.
type CommitRequestReconciler struct {
	Client client.Client
	// EveryReplica runs the controller on every replica: each answers the
	// requests of the branches it owns.
	EveryReplica bool
	Engine       interface {
		AttachCommitRequest(ctx context.Context, r *branch.Request) error
		// Answered names the requests whose worker answered; the answer
		// is the request's Outcome.
		Answered() <-chan event.GenericEvent
		// Owns and Assigned say which replica answers a request
		// (engine.Ownership); with one replica, this one.
		Owns(key branch.Key) bool
		Assigned(key branch.Key) bool
	}
	// Submitters is the admission webhook's record; nil when the webhook is
	// off, and every request then claims no actor.
	Submitters admission.SubmitterLookup
	// TargetReader reads the GitTarget a request names, uncached (the
	// manager's APIReader); nil reads through Client.
	TargetReader client.Reader
	// Retention keeps a finished request this long; zero means 24h.
	Retention time.Duration
	// FinalizeTimeout bounds the wait for the worker's answer past the
	// deadline; zero means 10m.
	FinalizeTimeout time.Duration
	Clock           clock.Clock

	mu sync.Mutex
	// inFlight are the requests handed to a worker, by name.
	inFlight map[types.NamespacedName]*inFlightRequest
	// started is when this process began reconciling: a request it finds
	// already past its attach grace (created before a restart or a leader
	// change) still gets the grace from here, while its GitTarget starts.
	started time.Time
}

type inFlightRequest struct {
	uid      types.UID
	deadline time.Time
	// request is what the worker was handed; its Outcome is the answer,
	// set by the engine's outcome stream.
	request *branch.Request
	// attributed is the AuthorAttributed condition the attach set, written
	// again with the outcome: the attach's own status patch may have lost
	// a conflict.
	attributed metav1.Condition
}

// SetupWithManager registers the controller: one reconcile at a time, so
// requests reach the workers in the order they are seen.
func (r *CommitRequestReconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.inFlight = map[types.NamespacedName]*inFlightRequest{}
	r.started = r.clock().Now()
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha3.CommitRequest{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1, NeedLeaderElection: ptr.To(!r.EveryReplica)}).
		WatchesRawSource(source.Channel(r.Engine.Answered(), &handler.EnqueueRequestForObject{})).
		Complete(r)
}

// Reconcile moves a request one step: attach it, report its outcome, or
// collect it once finished. The status is written once, in a deferred
// merge patch.
func (r *CommitRequestReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, err error) {
	cr := &v1alpha3.CommitRequest{}
	if err := r.Client.Get(ctx, req.NamespacedName, cr); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName, "")
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if owned, err := r.ownsRequest(ctx, cr); err != nil || !owned {
		// Another replica runs its GitTarget's branch; looked at again in
		// case this one takes the branch over.
		return ctrl.Result{RequeueAfter: notOwnedRecheck}, err
	}
	if finished(cr) {
		return r.collect(ctx, cr)
	}
	base := cr.DeepCopy()
	defer func() {
		if perr := r.patchStatus(ctx, base, cr); perr != nil {
			if apierrors.IsConflict(perr) && err == nil {
				// The cache had not seen this reconcile's previous write
				// yet (an answer can come back within one): run again on
				// the fresh object instead of writing over it.
				result = ctrl.Result{RequeueAfter: statusConflictRetry}
				return
			}
			err = errors.Join(err, perr)
		}
	}()
	cr.Status.ObservedGeneration = cr.Generation
	conditions := newConditionSet(&cr.Status.Conditions, cr.Generation)
	flight := r.flight(req.NamespacedName, cr.UID)
	if flight == nil {
		return r.attach(ctx, cr, conditions)
	}
	return r.report(cr, conditions, flight)
}

// attach settles AuthorAttributed and hands the request to the worker.
//
// Conditions: AuthorAttributed (AdmissionRecordFound or
// AdmissionRecordMissing); Reconciling=True/Finalizing once attached;
// Stalled/GitTargetNotFound at once when its GitTarget does not exist;
// Stalled/FinalizeFailed when it exists but is not mirrored by the attach
// timeout.
func (r *CommitRequestReconciler) attach(ctx context.Context, cr *v1alpha3.CommitRequest, conditions conditionSet) (ctrl.Result, error) {
	now := r.clock().Now()
	submitter := r.settleSubmitter(cr, conditions)
	deadline := now.Add(closeDelay(cr))
	key := client.ObjectKeyFromObject(cr)
	request := &branch.Request{
		ID: key.String(), Name: cr.Name, Target: branch.TargetKey{Namespace: cr.Namespace, Name: cr.Spec.TargetRef.Name},
		Submitter: submitter, Deadline: deadline, Message: cr.Spec.Message,
	}
	r.track(key, cr.UID, request, *conditions.find(v1alpha3.ConditionAuthorAttributed))
	err := r.Engine.AttachCommitRequest(ctx, request)
	if err == nil {
		conditions.markReconciling(v1alpha3.ReasonFinalizing, "waiting for the commit window of GitTarget "+cr.Spec.TargetRef.Name+" to close")
		return ctrl.Result{RequeueAfter: deadline.Sub(now) + r.finalizeTimeout()}, nil
	}
	r.forget(key, cr.UID)
	if !errors.Is(err, engine.ErrTargetNotMirrored) && !errors.Is(err, engine.ErrNotStarted) && !errors.Is(err, branch.ErrWorkerStopped) {
		return ctrl.Result{}, fmt.Errorf("attaching CommitRequest %s: %w", key, err)
	}
	if missing, err := r.targetMissing(ctx, cr, conditions); err != nil {
		return ctrl.Result{}, err
	} else if missing {
		return ctrl.Result{RequeueAfter: r.retention()}, nil
	}
	if now.Before(attachGraceEnds(cr, r.started)) {
		conditions.markReconciling(v1alpha3.ReasonFinalizing, "waiting for GitTarget "+cr.Spec.TargetRef.Name+" to be mirrored")
		return ctrl.Result{RequeueAfter: 2 * time.Second}, nil
	}
	r.fail(conditions, v1alpha3.ReasonFinalizeFailed, "GitTarget "+cr.Spec.TargetRef.Name+
		" is not being mirrored (it does not exist or is not Ready), so there is no commit window to close")
	return ctrl.Result{RequeueAfter: r.retention()}, nil
}

// targetMissing fails a request whose GitTarget does not exist at once:
// unlike one still starting, it cannot become mirrored within the attach
// grace (creating it later does not bring back the window this request
// was meant to close). Read uncached, so a GitTarget created together with
// the request is never taken for missing.
//
// Conditions: Stalled/GitTargetNotFound.
func (r *CommitRequestReconciler) targetMissing(ctx context.Context, cr *v1alpha3.CommitRequest, conditions conditionSet) (bool, error) {
	reader := r.TargetReader
	if reader == nil {
		reader = r.Client
	}
	key := client.ObjectKey{Namespace: cr.Namespace, Name: cr.Spec.TargetRef.Name}
	err := reader.Get(ctx, key, &v1alpha3.GitTarget{})
	if !apierrors.IsNotFound(err) {
		if err != nil {
			return false, fmt.Errorf("reading GitTarget %s of CommitRequest %s/%s: %w", key, cr.Namespace, cr.Name, err)
		}
		return false, nil
	}
	message := "GitTarget " + cr.Spec.TargetRef.Name + " does not exist in namespace " + cr.Namespace +
		", so there is no commit window to close; create the request again once the GitTarget is Ready"
	r.fail(conditions, v1alpha3.ReasonGitTargetNotFound, message)
	ctrl.LoggerFrom(ctx).Info("CommitRequest names a missing GitTarget", "gitTarget", key.String(), "reason", v1alpha3.ReasonGitTargetNotFound)
	return true, nil
}

// settleSubmitter reads who submitted the request and says so in
// AuthorAttributed; nil when the webhook recorded nobody.
func (r *CommitRequestReconciler) settleSubmitter(cr *v1alpha3.CommitRequest, conditions conditionSet) *branch.Author {
	if r.Submitters != nil {
		if actor, ok := r.Submitters.Submitter(cr.UID); ok && actor.Username != "" {
			author := attribution.GitAuthor(&actor)
			conditions.set(v1alpha3.ConditionAuthorAttributed, metav1.ConditionTrue, v1alpha3.ReasonAdmissionRecordFound,
				"submitted by "+actor.Username)
			return &author
		}
	}
	conditions.set(v1alpha3.ConditionAuthorAttributed, metav1.ConditionFalse, v1alpha3.ReasonAdmissionRecordMissing,
		"the admission webhook recorded no submitter (it is off or was unreachable); the request claims no actor and closes only a window that names nobody")
	return nil
}

// report writes the worker's answer, or gives up on a worker that never
// answered.
//
// Conditions: Ready=True with Committed, NoWindowInGrace, WindowMismatch
// or AlreadyPresent; Stalled with FinalizeFailed or FinalizeTimedOut;
// Pushed=True only with Committed.
func (r *CommitRequestReconciler) report(cr *v1alpha3.CommitRequest, conditions conditionSet, flight *inFlightRequest) (ctrl.Result, error) {
	conditions.set(flight.attributed.Type, flight.attributed.Status, flight.attributed.Reason, flight.attributed.Message)
	o, answered := flight.request.Outcome()
	if !answered {
		wait := flight.deadline.Add(r.finalizeTimeout()).Sub(r.clock().Now())
		if wait > 0 {
			conditions.markReconciling(v1alpha3.ReasonFinalizing, "waiting for the commit window of GitTarget "+cr.Spec.TargetRef.Name+" to close")
			return ctrl.Result{RequeueAfter: wait}, nil
		}
		r.fail(conditions, v1alpha3.ReasonFinalizeTimedOut, fmt.Sprintf(
			"the branch worker gave no answer within %s of the deadline (it was replaced or stopped); the changes are committed by the next window or replay", r.finalizeTimeout()))
		return ctrl.Result{RequeueAfter: r.retention()}, nil
	}
	switch o.Reason {
	case branch.RequestCommitted:
		conditions.markReady(v1alpha3.ReasonCommitted, o.Detail)
		conditions.set(v1alpha3.ConditionPushed, metav1.ConditionTrue, v1alpha3.ReasonCommitted, "commit "+o.Commit+" is on branch "+o.Branch)
		cr.Status.Branch, cr.Status.SHA, cr.Status.URL = o.Branch, o.Commit, o.URL
	case branch.RequestFinalizeFailed:
		r.fail(conditions, v1alpha3.ReasonFinalizeFailed, o.Detail)
	default:
		conditions.markReady(string(o.Reason), o.Detail)
		conditions.set(v1alpha3.ConditionPushed, metav1.ConditionFalse, string(o.Reason), "nothing was committed for this request")
	}
	return ctrl.Result{RequeueAfter: r.retention()}, nil
}

func (r *CommitRequestReconciler) fail(conditions conditionSet, reason, message string) {
	conditions.markStalled(reason, message)
	conditions.set(v1alpha3.ConditionPushed, metav1.ConditionFalse, reason, "nothing was pushed for this request")
}

// collect deletes a finished request once Retention has passed since it
// finished.
func (r *CommitRequestReconciler) collect(ctx context.Context, cr *v1alpha3.CommitRequest) (ctrl.Result, error) {
	r.forget(client.ObjectKeyFromObject(cr), cr.UID)
	ready := newConditionSet(&cr.Status.Conditions, cr.Generation).find(v1alpha3.ConditionReady)
	left := ready.LastTransitionTime.Add(r.retention()).Sub(r.clock().Now())
	if left > 0 {
		return ctrl.Result{RequeueAfter: left}, nil
	}
	if err := r.Client.Delete(ctx, cr, client.Preconditions{UID: &cr.UID}); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("deleting finished CommitRequest %s/%s: %w", cr.Namespace, cr.Name, err)
	}
	return ctrl.Result{}, nil
}

// finished reports whether the request has its outcome in status.
func finished(cr *v1alpha3.CommitRequest) bool {
	conditions := newConditionSet(&cr.Status.Conditions, cr.Generation)
	reconciling := conditions.find(v1alpha3.ConditionReconciling)
	return conditions.find(v1alpha3.ConditionReady) != nil && conditions.find(v1alpha3.ConditionPushed) != nil &&
		(reconciling == nil || reconciling.Status == metav1.ConditionFalse)
}

// attachGraceEnds is the decision how long a request waits for its
// GitTarget to be mirrored: its close delay and defaultAttachTimeout past
// its creation, or past this process's start when it was created before.
func attachGraceEnds(cr *v1alpha3.CommitRequest, started time.Time) time.Time {
	from := cr.CreationTimestamp.Time
	if started.After(from) {
		from = started
	}
	return from.Add(closeDelay(cr) + defaultAttachTimeout)
}

func closeDelay(cr *v1alpha3.CommitRequest) time.Duration {
	if cr.Spec.CloseDelaySeconds == nil {
		return 0
	}
	return time.Duration(*cr.Spec.CloseDelaySeconds) * time.Second
}

func (r *CommitRequestReconciler) patchStatus(ctx context.Context, base, cr *v1alpha3.CommitRequest) error {
	if equality.Semantic.DeepEqual(base.Status, cr.Status) {
		return nil
	}
	err := r.Client.Status().Patch(ctx, cr, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("patching the status of CommitRequest %s/%s: %w", cr.Namespace, cr.Name, err)
	}
	return nil
}

func (r *CommitRequestReconciler) track(key types.NamespacedName, uid types.UID, request *branch.Request, attributed metav1.Condition) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inFlight[key] = &inFlightRequest{uid: uid, deadline: request.Deadline, request: request, attributed: attributed}
}

// flight is the request in flight under key, if it is this object (a
// request deleted and created again under its name is a new one).
func (r *CommitRequestReconciler) flight(key types.NamespacedName, uid types.UID) *inFlightRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	if f := r.inFlight[key]; f != nil && f.uid == uid {
		c := *f
		return &c
	}
	return nil
}

// forget drops the request under key (of uid, or whichever when empty).
func (r *CommitRequestReconciler) forget(key types.NamespacedName, uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if f := r.inFlight[key]; f != nil && (uid == "" || f.uid == uid) {
		delete(r.inFlight, key)
	}
}

func (r *CommitRequestReconciler) clock() clock.Clock {
	if r.Clock != nil {
		return r.Clock
	}
	return clock.RealClock{}
}

func (r *CommitRequestReconciler) retention() time.Duration {
	if r.Retention > 0 {
		return r.Retention
	}
	return DefaultCommitRequestRetention
}

func (r *CommitRequestReconciler) finalizeTimeout() time.Duration {
	if r.FinalizeTimeout > 0 {
		return r.FinalizeTimeout
	}
	return defaultFinalizeTimeout
}

// notOwnedRecheck is how often a replica looks again at a CommitRequest
// whose GitTarget's branch another replica runs.
const notOwnedRecheck = 5 * time.Second

// ownsRequest reports whether this replica answers cr: the one running its
// GitTarget's branch, or, for a GitTarget that does not exist, the one the
// assignment gives the GitTarget's name to. With one replica it always
// does.
func (r *CommitRequestReconciler) ownsRequest(ctx context.Context, cr *v1alpha3.CommitRequest) (bool, error) {
	var target v1alpha3.GitTarget
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: cr.Namespace, Name: cr.Spec.TargetRef.Name}, &target)
	if apierrors.IsNotFound(err) {
		return r.Engine.Assigned(branch.Key{ProviderNamespace: cr.Namespace, Branch: "GitTarget/" + cr.Spec.TargetRef.Name}), nil
	}
	if err != nil {
		return false, fmt.Errorf("reading GitTarget %s of CommitRequest %s: %w", cr.Spec.TargetRef.Name, cr.Name, err)
	}
	return r.Engine.Owns(branchOf(&target)), nil
}
