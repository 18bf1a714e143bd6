package controller

import (
	"context"
	"fmt"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/internal/branch"
)

// Pull-request mode (docs/pull-request-mode.md): a GitTarget with
// spec.push.mode PullRequest writes its head branch (HeadBranch) through
// the worker of that branch, which keeps one pull request from it into
// spec.branch. The head is what the operator writes, so it is the branch
// allowedBranches must admit, and the branch paths are compared on.

// checkPullRequest refuses a target whose head branch collides
// (HeadBranchConflict: its own base, or a branch an older target of the
// same repository writes another way) or whose templates do not parse
// (InvalidSpec), both Stalled; else it sets run.pullRequest in mode
// PullRequest.
func (r *GitTargetReconciler) checkPullRequest(ctx context.Context, run *targetRun) error {
	t := run.target
	if t.Spec.PullRequestMode() && t.HeadBranch() == t.Spec.Branch {
		return r.refuse(ctx, run, v1alpha3.ReasonHeadBranchConflict, fmt.Sprintf(
			"the head branch %q is spec.branch itself, which the pull request merges into; set spec.push.pullRequest.headBranch to another branch "+
				"(delete this GitTarget and create it again: the head branch is immutable)", t.HeadBranch()))
	}
	other, err := r.headBranchHolder(ctx, t, run.provider)
	if err != nil {
		return err
	}
	if other != nil {
		return r.refuse(ctx, run, v1alpha3.ReasonHeadBranchConflict, headBranchConflictMessage(t, other))
	}
	if !t.Spec.PullRequestMode() {
		return nil
	}
	title, body := pullRequestTemplates(t.Spec.Push)
	templates, err := branch.ParsePullRequestTemplates(title, body)
	if err != nil {
		return r.refuse(ctx, run, v1alpha3.ReasonInvalidSpec, fmt.Sprintf("spec.push.pullRequest: %v", err))
	}
	run.pullRequest = &branch.PullRequestSettings{Base: t.Spec.Branch, Templates: templates}
	return nil
}

// refuse takes the target out of the engine and sets Validated False
// (Stalled): only a change of a spec can help.
func (r *GitTargetReconciler) refuse(ctx context.Context, run *targetRun, reason, msg string) error {
	r.Engine.RemoveTarget(ctx, keyOf(run.target))
	run.conds.block(v1alpha3.ConditionValidated, reason, msg)
	return errStop
}

// pullRequestTemplates are spec.push.pullRequest's title and body, "" for
// the defaults.
func pullRequestTemplates(push *v1alpha3.TargetPush) (title, body string) {
	if push == nil || push.PullRequest == nil {
		return "", ""
	}
	return push.PullRequest.Title, push.PullRequest.Body
}

// writesAs is how a target writes its branch: directly, or as the head of
// a pull request into its base with its templates. Two targets writing one
// branch of one repository must write it the same way: they share its
// worker, which has one mode, one base and one pair of templates.
func writesAs(t *v1alpha3.GitTarget) string {
	if !t.Spec.PullRequestMode() {
		return "direct"
	}
	title, body := pullRequestTemplates(t.Spec.Push)
	return fmt.Sprintf("pull request into %q (title %q, body %q)", t.Spec.Branch, title, body)
}

// headBranchHolder finds the GitTarget that writes t's branch another way
// (writesAs), through any GitProvider of the same repository, in any
// namespace, and keeps it: the older one that can write (holdsPath, the
// rule paths follow). nil when t may write its branch as it says.
func (r *GitTargetReconciler) headBranchHolder(ctx context.Context, t *v1alpha3.GitTarget, provider *v1alpha3.GitProvider) (*v1alpha3.GitTarget, error) {
	mine := writesAs(t)
	return r.olderHolder(ctx, t, provider, "head branches", func(o *v1alpha3.GitTarget) bool {
		return o.HeadBranch() == t.HeadBranch() && (writesAs(o) != mine || t.Spec.PullRequestMode() && !sameWorker(o, t))
	})
}

// sameWorker reports whether two targets write through one GitProvider,
// so one worker writes their branch. A head branch in pull-request mode
// has one writer: two workers on it would each start it afresh from the
// base after a merge, each with only its own targets' paths, and revert
// the other's.
func sameWorker(a, b *v1alpha3.GitTarget) bool {
	return a.Namespace == b.Namespace && a.Spec.ProviderRef.Name == b.Spec.ProviderRef.Name
}

func headBranchConflictMessage(t, holder *v1alpha3.GitTarget) string {
	if writesAs(t) == writesAs(holder) {
		sameProvider := ""
		if holder.Namespace == t.Namespace {
			sameProvider = fmt.Sprintf(", write through GitProvider %s (spec.providerRef is immutable too)", holder.Spec.ProviderRef.Name)
		}
		return fmt.Sprintf("head branch %q is written by GitTarget %s/%s, which is older and writes it through GitProvider %s/%s; "+
			"a pull request's head branch has one writer: give this GitTarget another head branch (spec.push.pullRequest.headBranch; "+
			"delete it and create it again: it is immutable)%s, or delete %s/%s",
			t.HeadBranch(), holder.Namespace, holder.Name, holder.Namespace, holder.Spec.ProviderRef.Name, sameProvider, holder.Namespace, holder.Name)
	}
	return fmt.Sprintf("branch %q is written by GitTarget %s/%s, which is older and writes it as %s, while this one would write it as %s; "+
		"one branch has one writer's mode: give this GitTarget another head branch (spec.push.pullRequest.headBranch) or branch "+
		"(delete it and create it again: both are immutable), or delete %s/%s",
		t.HeadBranch(), holder.Namespace, holder.Name, writesAs(holder), writesAs(t), holder.Namespace, holder.Name)
}

// branchNotAllowedMessage names the branch the operator would write: the
// head branch in mode PullRequest (the base need not be allowed: nothing
// is written to it).
func branchNotAllowedMessage(t *v1alpha3.GitTarget, gp *v1alpha3.GitProvider) string {
	if t.Spec.PullRequestMode() {
		return fmt.Sprintf("head branch %q (spec.push.pullRequest.headBranch, default gitops-reverser/<name>) matches none of GitProvider %s's "+
			"allowedBranches %v; in mode PullRequest the head branch is the one written, so it is the one to allow", t.HeadBranch(), gp.Name, gp.Spec.AllowedBranches)
	}
	return fmt.Sprintf("branch %q matches none of GitProvider %s's allowedBranches %v", t.Spec.Branch, gp.Name, gp.Spec.AllowedBranches)
}

// reportPullRequest sets status.pullRequest and the PullRequest condition
// from where the worker said the pull request stands; in direct mode it
// clears both. The condition does not take Ready: commits reach the head
// whatever it says.
func reportPullRequest(run *targetRun, info *branch.PullRequestInfo) {
	t := run.target
	if !t.Spec.PullRequestMode() {
		t.Status.PullRequest = nil
		run.conds.remove(v1alpha3.ConditionPullRequest)
		return
	}
	st := &v1alpha3.PullRequestStatus{HeadBranch: t.HeadBranch(), BaseBranch: t.Spec.Branch}
	if info != nil {
		st.Number, st.URL, st.State, st.LastAction = info.Number, info.URL, string(info.State), info.Note
	}
	t.Status.PullRequest = st
	ok, reason, msg := pullRequestCondition(st, info)
	run.conds.setBool(v1alpha3.ConditionPullRequest, ok, reason, msg)
}

// pullRequestCondition decides the PullRequest condition from the
// worker's last word (nil before it said anything).
func pullRequestCondition(st *v1alpha3.PullRequestStatus, info *branch.PullRequestInfo) (ok bool, reason, msg string) {
	switch {
	case info == nil:
		return true, v1alpha3.ReasonPullRequestPending, fmt.Sprintf(
			"no pull request yet: the next change is committed to head branch %q and opens one into %q", st.HeadBranch, st.BaseBranch)
	case !info.Supported:
		return false, v1alpha3.ReasonPullRequestsUnsupported, fmt.Sprintf(
			"the forge has no pull requests: changes are pushed to head branch %q only; open the pull request into %q by hand", st.HeadBranch, st.BaseBranch)
	case info.Conflict:
		return false, v1alpha3.ReasonPullRequestConflict, fmt.Sprintf(
			"%q moved and conflicts with head branch %q, and this forge can neither merge it in nor take a rebuilt head: resolve the conflict "+
				"on pull request %s; changes go on to the head", st.BaseBranch, st.HeadBranch, orDefault(st.URL, fmt.Sprintf("#%d", st.Number)))
	case info.Err != nil:
		return false, v1alpha3.ReasonPullRequestFailing, fmt.Sprintf(
			"the last pull request request failed, and is tried again at the next change (changes go on to head branch %q): %v", st.HeadBranch, info.Err)
	case info.Number != 0 && info.State == forges.PullRequestOpen:
		return true, v1alpha3.ReasonPullRequestOpen, fmt.Sprintf("pull request #%d from %q into %q is open (%s): %s",
			info.Number, st.HeadBranch, st.BaseBranch, orDefault(st.URL, "no URL"), orDefault(info.Note, "up to date"))
	case info.Number != 0:
		return true, v1alpha3.ReasonPullRequestPending, fmt.Sprintf(
			"pull request #%d was %s; the next change starts head branch %q afresh from %q and opens a new one", info.Number, info.State, st.HeadBranch, st.BaseBranch)
	}
	return true, v1alpha3.ReasonPullRequestPending, fmt.Sprintf(
		"no pull request is open: the next change opens one from head branch %q into %q", st.HeadBranch, st.BaseBranch)
}
