package mirror

import (
	"context"
	"fmt"
	"time"

	"github.com/configbutler/gitops-reverser/internal/watch"
)

// historyCheckTimeout bounds the start's question to the forge whether the
// branch still holds a stored head. Past it the streams replay.
const historyCheckTimeout = 30 * time.Second

// noHead stands for "no branch head" in a stored cursor: the branch had no
// commit, or the worker had not read it.
const noHead = "none"

func headToken(head string) string {
	if head == "" {
		return noHead
	}
	return head
}

func parseHeadToken(token string) string {
	if token == noHead {
		return ""
	}
	return token
}

// historyCheck is the answer for one stored head.
type historyCheck struct {
	held bool
	err  error
}

// checkHistory returns the stored resourceVersion rv when the branch still
// holds head, the commit the cursor was settled on. A branch rewritten
// behind it (a force-push back over the operator's commits) has lost
// changes the cursor counts as written: the cursor is dropped and the
// stream replays, which puts them back, counted as branch_rewritten. The
// forge is asked once per stored head, whatever the number of streams.
func (k *cursorKeeper) checkHistory(ctx context.Context, key, rv, head string) (string, error) {
	check := k.historyOf(ctx, head)
	switch {
	case check.err != nil:
		return "", fmt.Errorf("checking that the branch of GitTarget %s still holds commit %s, which the resume cursor was stored at: %w",
			k.target, headToken(head), check.err)
	case !check.held:
		k.drop(key)
		return "", &watch.NotResumable{Reason: watch.ColdBranchRewritten,
			Why: fmt.Sprintf("the branch no longer holds commit %s, which the resume cursor was stored at "+
				"(rewritten, as by a force-push); replaying puts back what it lost", headToken(head))}
	}
	return rv, nil
}

// historyOf asks the branch worker whether the branch holds head, once.
func (k *cursorKeeper) historyOf(ctx context.Context, head string) historyCheck {
	k.checkMu.Lock()
	defer k.checkMu.Unlock()
	if check, ok := k.checked[head]; ok {
		return check
	}
	ctx, cancel := context.WithTimeout(ctx, historyCheckTimeout)
	defer cancel()
	held, err := k.sink.HoldsCommit(ctx, head)
	check := historyCheck{held: held, err: err}
	k.checked[head] = check
	switch {
	case err != nil:
	case held:
		k.mu.Lock()
		if k.head == "" {
			k.head = head
		}
		k.mu.Unlock()
	default:
		k.log.Info("the branch was rewritten since the resume cursors were stored; the watches replay to put back what it lost",
			"storedAt", headToken(head))
	}
	return check
}
