package github

import (
	"sync"
	"time"

	"github.com/configbutler/gitops-reverser/forges"
)

// GitHub's secondary limits on content creation: "no more than 80
// content-generating requests per minute and no more than 500
// content-generating requests per hour"
// (https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api#about-secondary-rate-limits).
// No response header reports how much of them is left, so the client counts
// its own content-creating requests and paces itself: a commit starts only
// when all of its requests fit, so it never stops half-way on a limit of
// its own making, and GitHub never has to refuse it.
const (
	DefaultContentPerMinute = 80
	DefaultContentPerHour   = 500
)

// ContentPacer remembers when content-creating requests were sent during
// the last hour. GitHub counts its secondary limits per user or App
// installation, so clients that commit for the same installation or token
// (a worker per branch) share one through Options.Pacer.
type ContentPacer struct {
	now                func() time.Time
	perMinute, perHour int

	mu   sync.Mutex
	sent []time.Time // oldest first, none older than an hour
}

// NewContentPacer paces to perMinute and perHour content-creating requests
// (GitHub's documented 80 and 500 when zero), on the clock now.
func NewContentPacer(now func() time.Time, perMinute, perHour int) *ContentPacer {
	if now == nil {
		now = time.Now
	}
	return &ContentPacer{now: now, perMinute: withDefaultLimit(perMinute, DefaultContentPerMinute),
		perHour: withDefaultLimit(perHour, DefaultContentPerHour)}
}

func withDefaultLimit(limit, fallback int) int {
	if limit <= 0 {
		return fallback
	}
	return limit
}

// record notes a content-creating request sent now.
func (p *ContentPacer) record() {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	p.trim(now)
	p.sent = append(p.sent, now)
}

// trim forgets requests older than an hour.
func (p *ContentPacer) trim(now time.Time) {
	drop := 0
	for drop < len(p.sent) && !p.sent[drop].After(now.Add(-time.Hour)) {
		drop++
	}
	p.sent = p.sent[drop:]
}

// roomFor is how long to wait until n more content-creating requests fit in
// both limits; zero when they fit now. n beyond a limit waits for an empty
// window, the most that can ever be had.
func (p *ContentPacer) roomFor(n int) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	p.trim(now)
	return max(p.waitIn(now, time.Minute, p.perMinute, n), p.waitIn(now, time.Hour, p.perHour, n))
}

// waitIn is the wait until n more requests fit limit within span: until
// enough of the requests sent within span have aged out of it.
func (p *ContentPacer) waitIn(now time.Time, span time.Duration, limit, n int) time.Duration {
	recent := p.within(now, span)
	excess := len(recent) + min(n, limit) - limit
	if excess <= 0 {
		return 0
	}
	return recent[excess-1].Add(span).Sub(now)
}

func (p *ContentPacer) within(now time.Time, span time.Duration) []time.Time {
	for i, t := range p.sent {
		if t.After(now.Add(-span)) {
			return p.sent[i:]
		}
	}
	return nil
}

// budget is the tighter of the two limits as a Budget; ok is false while
// nothing was sent in the last hour.
func (p *ContentPacer) budget() (forges.Budget, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	p.trim(now)
	if len(p.sent) == 0 {
		return forges.Budget{}, false
	}
	minute := p.within(now, time.Minute)
	hourly := forges.Budget{Limit: p.perHour, Remaining: max(p.perHour-len(p.sent), 0), Reset: p.sent[0].Add(time.Hour)}
	if len(minute) == 0 {
		return hourly, true
	}
	perMinute := forges.Budget{Limit: p.perMinute, Remaining: max(p.perMinute-len(minute), 0), Reset: minute[0].Add(time.Minute)}
	return tighter(hourly, perMinute), true
}

// tighter is the budget with the smaller share left.
func tighter(a, b forges.Budget) forges.Budget {
	if b.Remaining*a.Limit < a.Remaining*b.Limit {
		return b
	}
	return a
}
