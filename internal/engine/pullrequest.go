package engine

import (
	"github.com/configbutler/gitops-reverser/internal/branch"
)

// pullRequest records where a target's pull request stands, for its
// status. With rebuild, the worker started the head afresh from the base,
// so the target's path must be written again from the cluster: the next
// apply replays its streams, as a resync request makes them, once. That
// apply is the controller's, which the notification asks for: an apply of
// the spec the engine runs, made here, could land after a newer one of the
// controller's and put the old spec back (a suspend undone, old keys).
func (e *Engine) pullRequest(target branch.TargetKey, info branch.PullRequestInfo, rebuild bool) {
	e.mu.Lock()
	if entry := e.targets[target]; entry != nil {
		entry.pullRequest = &info
		entry.rebuild = entry.rebuild || rebuild
	}
	e.mu.Unlock()
	e.notify(target)
}
