package branch

import (
	"time"

	"golang.org/x/time/rate"
)

// pushBudget spaces commits to the remote when windows pile up: a small
// burst goes out at once, then one commit per interval, so a burst of
// windows cannot turn into a push storm. A window that waits alone is never
// held back (see push), so an idle remote adds no latency. The limiter is
// always asked at an explicit time from the worker's clock, never its own.
type pushBudget struct {
	limiter  *rate.Limiter
	interval time.Duration
}

// newPushBudget allows burst commits at once and one more per interval; a
// non-positive interval never holds a commit back.
func newPushBudget(burst int, interval time.Duration) *pushBudget {
	limit := rate.Inf
	if interval > 0 {
		limit = rate.Every(interval)
	}
	return &pushBudget{limiter: rate.NewLimiter(limit, burst), interval: interval}
}

// wait is how long until a commit may be pushed; zero means now.
func (b *pushBudget) wait(now time.Time) time.Duration {
	if b.interval <= 0 {
		return 0
	}
	tokens := b.limiter.TokensAt(now)
	if tokens >= 1 {
		return 0
	}
	return time.Duration((1 - tokens) * float64(b.interval))
}

// spend records a pushed commit. A commit pushed alone with no token left
// takes none, so it does not put the budget in debt.
func (b *pushBudget) spend(now time.Time) {
	b.limiter.AllowN(now, 1)
}
