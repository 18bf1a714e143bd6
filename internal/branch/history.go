package branch

import (
	"context"
	"errors"
	"fmt"

	"github.com/configbutler/gitops-reverser/forges"
)

// HistoryDepth is how many commits back from the branch head a forge that
// walks history (Gitea's commit list, a plain Git remote) looks for a
// commit before it counts the commit as gone. Past it the branch is taken
// as rewritten: the watches replay, which is always correct, only slower.
const HistoryDepth = 200

// HoldsCommit reports whether the branch still holds commit in its history:
// commit is the head, or the head descends from it. It asks the forge now,
// off the worker's loop, so the answer is about the branch as it is, not as
// the worker last saw it. An empty commit stands for "no branch yet": it is
// held only while the branch still has no commit. A forge that cannot tell
// (no forges.HistoryReader) holds only its head.
func (w *Worker) HoldsCommit(ctx context.Context, commit string) (bool, error) {
	head, err := w.cfg.Forge.Head(ctx, w.cfg.Key.Branch)
	switch {
	case errors.Is(err, forges.ErrNotFound), errors.Is(err, forges.ErrEmptyRepository):
		return commit == "", nil
	case err != nil:
		return false, fmt.Errorf("reading the head of branch %s: %w", w.cfg.Key.Branch, err)
	case commit == "" || head == commit:
		return head == commit, nil
	}
	reader, ok := w.cfg.Forge.(forges.HistoryReader)
	if !ok {
		return false, nil
	}
	held, err := reader.InHistory(ctx, head, commit, HistoryDepth)
	if err != nil {
		return false, fmt.Errorf("looking for commit %s in the history of branch %s: %w", commit, w.cfg.Key.Branch, err)
	}
	return held, nil
}
