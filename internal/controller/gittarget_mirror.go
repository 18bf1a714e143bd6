package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/internal/engine"
	"github.com/configbutler/gitops-reverser/internal/manifest"
	"github.com/configbutler/gitops-reverser/internal/mirror"
	"github.com/configbutler/gitops-reverser/internal/rules"
	"github.com/configbutler/gitops-reverser/internal/watch"
)

const (
	// retryShort re-checks a target that waits on something expected to
	// clear soon (a replay, a provider becoming Ready).
	retryShort = 2 * time.Second
)

// workerSettings hands the engine the worker's declarative spec; the
// engine builds the forge client, signer and messages from it, only when
// its fingerprint is not the running worker's. A failure here is the
// provider's to report; the target waits
// (GitPathAccepted=False/GitProviderNotReady).
func (r *GitTargetReconciler) workerSettings(ctx context.Context, run *targetRun) error {
	gp := run.provider
	run.spec.Key = keyOf(run.target)
	run.spec.UID = run.target.UID
	run.spec.Path = run.target.Spec.Path
	run.spec.Placement = placementOf(run.target.Spec.Placement)
	run.spec.Worker = branchOf(run.target)
	spec := engine.WorkerSpec{Key: run.spec.Worker, Provider: gp, PullRequest: run.pullRequest}
	if pr := run.target.Spec.Push; run.pullRequest != nil {
		title, body := pullRequestTemplates(pr)
		spec.PullRequestFingerprint = engine.PullRequestFingerprint(run.pullRequest.Base, title, body)
	}
	// Only a running worker is worth asking the cache about: at start no
	// worker runs, and the cache may still be filling.
	if _, ok := r.Engine.WorkerFingerprint(run.spec.Worker); ok {
		if fingerprint, known := r.cachedSettingsFingerprint(ctx, gp); known {
			spec.Fingerprint = fingerprint
		}
	}
	settings, err := r.Engine.PrepareWorker(ctx, spec)
	if err != nil {
		run.conds.wait(v1alpha3.ConditionGitPathAccepted, v1alpha3.ReasonGitProviderNotReady, err.Error())
		var build *engine.BuildError
		if !errors.As(err, &build) || build.Retry {
			run.requeue = retryShort
		}
		return errStop
	}
	run.spec.Settings = settings
	return nil
}

// placementOf turns spec.placement into the planner's plain policy. The
// API has validated the templates' shape; what a template renders for an
// object is checked when it is placed.
func placementOf(spec *v1alpha3.PlacementSpec) manifest.Placement {
	if spec == nil {
		return manifest.Placement{}
	}
	p := manifest.Placement{Default: string(spec.Default)}
	if len(spec.ByType) > 0 {
		p.ByType = make(map[string]string, len(spec.ByType))
		for gvr, template := range spec.ByType {
			p.ByType[gvr] = string(template)
		}
	}
	return p
}

// resolveRules compiles the WatchRules and ClusterWatchRules that name this
// target into claims against the source's API surface.
func (r *GitTargetReconciler) resolveRules(ctx context.Context, run *targetRun) error {
	t := run.target
	types := run.source.Catalog.Types()
	var results []rules.Result
	var wrs v1alpha3.WatchRuleList
	if err := r.Client.List(ctx, &wrs, ctrl.InNamespace(t.Namespace)); err != nil {
		return fmt.Errorf("listing WatchRules: %w", err)
	}
	var namespaces []rules.NamespaceInfo
	for i := range wrs.Items {
		if wrs.Items[i].Spec.TargetRef.Name != t.Name {
			continue
		}
		if namespaces == nil {
			ns, err := sourceNamespaces(ctx, r.Client, run.source)
			if err != nil {
				return err
			}
			namespaces = ns
		}
		results = append(results, rules.CompileWatchRule(&wrs.Items[i], t, types, namespaces))
	}
	var cwrs v1alpha3.ClusterWatchRuleList
	if err := r.Client.List(ctx, &cwrs); err != nil {
		return fmt.Errorf("listing ClusterWatchRules: %w", err)
	}
	for i := range cwrs.Items {
		ref := cwrs.Items[i].Spec.TargetRef
		if ref.Namespace == t.Namespace && ref.Name == t.Name {
			results = append(results, rules.CompileClusterWatchRule(&cwrs.Items[i], types))
		}
	}
	run.spec.Claims = rules.Merge(results...)
	return nil
}

// mirror hands the target to the engine, with a resync requested by the
// resync-requested-at annotation and not handled yet; once the engine has
// it, the value is recorded as handled.
func (r *GitTargetReconciler) mirror(_ context.Context, run *targetRun) error {
	requested := run.target.Annotations[v1alpha3.ResyncRequestedAtAnnotation]
	if requested != run.target.Status.LastHandledResyncAt {
		run.spec.Resync = requested
	}
	run.spec.Suspended = run.target.Spec.Suspend
	if err := r.Engine.ApplyTarget(run.spec); err != nil {
		if errors.Is(err, engine.ErrNotStarted) || errors.Is(err, engine.ErrNotOwner) {
			return err
		}
		if errors.Is(err, engine.ErrWorkerReplaced) {
			// Between looking the worker up and applying, it was replaced:
			// build the settings this time, at once, with no condition
			// changed (nothing is wrong).
			run.requeue = time.Millisecond
			return errStop
		}
		run.conds.wait(v1alpha3.ConditionStreamsRunning, v1alpha3.ReasonSourceUnreachable, err.Error())
		run.requeue = retryShort
		return errStop
	}
	run.target.Status.LastHandledResyncAt = requested
	return nil
}

// reportRuntime sets StreamsRunning (True; False/SourceForbidden: Stalled
// until the operator is granted list and watch; False/InitialReplay or
// SourceUnreachable while replaying or reconnecting: Reconciling) and
// GitPathAccepted (False/UnsupportedContent: Stalled), ObjectsWritten
// (reportRefusals), and the last commit.
func (r *GitTargetReconciler) reportRuntime(_ context.Context, run *targetRun) error {
	st, ok := r.Engine.Status(keyOf(run.target))
	if !ok {
		return nil
	}
	s := st.Streams
	run.target.Status.Streams = &v1alpha3.StreamsSummary{Total: int32(s.Total), Running: int32(s.Running), Replaying: int32(s.Replaying), Failing: int32(s.Failing)}
	switch {
	case len(s.Forbidden) > 0:
		// Stalled, since only a grant helps; the streams retry on their
		// own and the target is refreshed when their replay ends.
		run.conds.block(v1alpha3.ConditionStreamsRunning, v1alpha3.ReasonSourceForbidden, forbiddenMessage(s.Forbidden))
	case len(s.NotServed) > 0:
		run.conds.wait(v1alpha3.ConditionStreamsRunning, v1alpha3.ReasonResourceNotServed, notServedMessage(s))
		run.requeue = retryShort
	case s.Failing > 0:
		run.conds.wait(v1alpha3.ConditionStreamsRunning, v1alpha3.ReasonSourceUnreachable,
			fmt.Sprintf("%d of %d streams are reconnecting to the source", s.Failing, s.Total))
		run.requeue = retryShort
	case s.Total == 0:
		run.conds.setBool(v1alpha3.ConditionStreamsRunning, true, v1alpha3.ReasonSucceeded, "no rules select resources for this target")
	case s.Running == s.Total:
		run.conds.setBool(v1alpha3.ConditionStreamsRunning, true, v1alpha3.ReasonSucceeded, fmt.Sprintf("%d streams running", s.Total))
	default:
		run.conds.wait(v1alpha3.ConditionStreamsRunning, v1alpha3.ReasonInitialReplay,
			fmt.Sprintf("%d of %d streams running (%d replaying, %d failing)", s.Running, s.Total, s.Replaying, s.Failing))
		run.requeue = retryShort
	}
	switch {
	case st.LastError == nil:
		run.conds.setBool(v1alpha3.ConditionGitPathAccepted, true, v1alpha3.ReasonSucceeded, "the Git path is safe to write")
	case st.Unsupported:
		run.conds.block(v1alpha3.ConditionGitPathAccepted, v1alpha3.ReasonUnsupportedContent, st.LastError.Error())
	default:
		run.conds.wait(v1alpha3.ConditionGitPathAccepted, commitFailureReason(st.LastError), st.LastError.Error())
	}
	if c := st.LastCommit; c != nil {
		run.target.Status.LastCommit = &v1alpha3.CommitReference{SHA: c.Commit, ShortSHA: shortSHA(c.Commit), URL: c.URL,
			Time: &metav1.Time{Time: c.Time}}
	}
	r.reportRefusals(run, st.Refused)
	reportPullRequest(run, st.PullRequest)
	return nil
}

// shortSHA is the abbreviation git log --oneline shows by default.
func shortSHA(sha string) string {
	return sha[:min(len(sha), 7)]
}

// notServedMessage names each type the source stopped serving; the other
// streams are unaffected.
func notServedMessage(s mirror.Summary) string {
	types := make([]string, 0, len(s.NotServed))
	for _, scope := range s.NotServed {
		if !slices.Contains(types, scope.Resource()) {
			types = append(types, scope.Resource())
		}
	}
	msg := fmt.Sprintf("the source no longer serves %s (its CRD was deleted?); the other %d of %d streams are unaffected. "+
		"The rules stop claiming it once discovery confirms the removal (after a grace of about two minutes); "+
		"recreate the CRD, or remove the type from the rules", strings.Join(types, ", "), s.Total-len(s.NotServed), s.Total)
	if s.Failing > 0 {
		msg += fmt.Sprintf("; %d other streams are reconnecting to the source", s.Failing)
	}
	return msg
}

// forbiddenMessage names every refused stream and what to grant, and
// quotes the API server once, for the user it refused.
func forbiddenMessage(refusals []watch.Forbidden) string {
	scopes := make([]string, 0, len(refusals))
	for _, f := range refusals {
		if f.Scope.Namespace == "" {
			scopes = append(scopes, f.Scope.Resource()+" cluster-wide")
		} else {
			scopes = append(scopes, f.Scope.Resource()+" in namespace "+f.Scope.Namespace)
		}
	}
	return fmt.Sprintf("the operator may not list/watch %s: grant it list and watch (with the chart: rbac.mirroredResources); "+
		"the streams retry and resume once granted. The API server said: %s", strings.Join(scopes, ", "), refusals[0].Message)
}

// commitFailureReason names a failed commit by the forge's error kind.
func commitFailureReason(err error) string {
	switch forges.KindOf(err) {
	case forges.KindUnauthorized:
		return v1alpha3.ReasonUnauthorized
	case forges.KindForbidden:
		return v1alpha3.ReasonForbidden
	case forges.KindRateLimited:
		return v1alpha3.ReasonRateLimited
	}
	return v1alpha3.ReasonRepositoryUnreachable
}
