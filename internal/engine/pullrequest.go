package engine

import (
	"github.com/configbutler/gitops-reverser/internal/branch"
)

// pullRequest records where a target's pull request stands, for its
// status. With rebuild, the worker started the head afresh from the base,
// so the target's path must be written again from the cluster: its streams
// replay, as a resync request makes them, once. The replay runs off the
// fan-out's goroutine: restarting streams talks to the worker, which may be
// waiting to hand this goroutine its next outcome.
func (e *Engine) pullRequest(target branch.TargetKey, info branch.PullRequestInfo, rebuild bool) {
	e.mu.Lock()
	entry := e.targets[target]
	if entry != nil {
		entry.pullRequest = &info
		entry.rebuild = entry.rebuild || rebuild
	}
	e.mu.Unlock()
	if entry != nil && rebuild {
		go e.replayForRebuild(target)
	}
	e.notify(target)
}

// replayForRebuild applies the target's running spec again: the apply
// sees the rebuild asked for and restarts the streams with a replay. An
// apply of the controller's that came first has done it already, and this
// one then changes nothing.
func (e *Engine) replayForRebuild(target branch.TargetKey) {
	e.mu.Lock()
	entry := e.targets[target]
	if entry == nil || !entry.rebuild {
		e.mu.Unlock()
		return
	}
	spec := entry.spec
	e.mu.Unlock()
	if err := e.ApplyTarget(spec); err != nil {
		// The controller's next apply replays it: the flag stays set.
		e.opts.Log.Error(err, "replaying a GitTarget whose pull request was rebuilt on its base", "gittarget", target.String())
	}
}
