package branch

import "time"

// pushBudget spaces commits to the remote when windows pile up: a small
// burst goes out at once, then one commit per interval, so a burst of
// windows cannot turn into a push storm. A window that waits alone is never
// held back (see push), so an idle remote adds no latency.
type pushBudget struct {
	burst    float64
	interval time.Duration
	tokens   float64
	last     time.Time
}

func newPushBudget(burst int, interval time.Duration) *pushBudget {
	return &pushBudget{burst: float64(burst), interval: interval, tokens: float64(burst)}
}

func (b *pushBudget) refill(now time.Time) {
	if b.interval <= 0 {
		b.tokens = b.burst
		return
	}
	if !b.last.IsZero() {
		b.tokens = min(b.burst, b.tokens+float64(now.Sub(b.last))/float64(b.interval))
	}
	b.last = now
}

// wait is how long until a commit may be pushed; zero means now.
func (b *pushBudget) wait(now time.Time) time.Duration {
	b.refill(now)
	if b.tokens >= 1 {
		return 0
	}
	return time.Duration((1 - b.tokens) * float64(b.interval))
}

// spend records a pushed commit; a commit pushed alone with no token left
// does not put the budget in debt.
func (b *pushBudget) spend(now time.Time) {
	b.refill(now)
	b.tokens = max(b.tokens-1, 0)
}
