package branch

import "time"

// pushBudget spaces commits to the remote when windows pile up: a small
// burst goes out at once, then one commit per interval, so a burst of
// windows cannot turn into a push storm. A window that waits alone is never
// held back (see push), so an idle remote adds no latency. It is a token
// bucket asked at explicit times, as golang.org/x/time/rate's Limiter at
// TokensAt and AllowN, kept as plain fields so the core's state
// serializes.
type pushBudget struct {
	Burst    int
	Interval time.Duration
	// Tokens were left at Last.
	Tokens float64
	Last   time.Time
}

// newPushBudget allows burst commits at once and one more per interval; a
// non-positive interval never holds a commit back.
func newPushBudget(burst int, interval time.Duration) pushBudget {
	return pushBudget{Burst: burst, Interval: interval, Tokens: float64(burst)}
}

// tokensAt is how many commits may go out at now.
func (b *pushBudget) tokensAt(now time.Time) float64 {
	tokens := b.Tokens
	if elapsed := now.Sub(b.Last); elapsed > 0 && b.Interval > 0 {
		tokens += elapsed.Seconds() / b.Interval.Seconds()
	}
	return min(tokens, float64(b.Burst))
}

// wait is how long until a commit may be pushed; zero means now.
func (b *pushBudget) wait(now time.Time) time.Duration {
	if b.Interval <= 0 {
		return 0
	}
	tokens := b.tokensAt(now)
	if tokens >= 1 {
		return 0
	}
	return time.Duration((1 - tokens) * float64(b.Interval))
}

// spend records a pushed commit. A commit pushed alone with no token left
// takes none, so it does not put the budget in debt.
func (b *pushBudget) spend(now time.Time) {
	if b.Interval <= 0 {
		return
	}
	if tokens := b.tokensAt(now); tokens >= 1 {
		b.Tokens, b.Last = tokens-1, now
	}
}
