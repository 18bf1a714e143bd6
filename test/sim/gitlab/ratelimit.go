package gitlab

import (
	"net/http"
	"strconv"
	"time"
)

// rateLimit is the authenticated API throttle: limit requests per window
// per user. A zero limit disables it.
type rateLimit struct {
	limit  int
	window time.Duration
}

// throttle is one user's count in the current window.
type throttle struct {
	windowStart time.Time
	observed    int
}

// SetRateLimit throttles every user (and anonymous callers, together) to
// limit requests per window, as GitLab's throttle_authenticated_api does;
// a limit of 0 turns throttling off. Counting restarts.
func (s *Server) SetRateLimit(limit int, window time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if window <= 0 {
		window = time.Minute
	}
	s.limit = rateLimit{limit: limit, window: window}
	s.throttles = map[string]*throttle{}
}

// admit counts the request against the caller's budget and writes the
// rate-limit headers. When the budget is spent it answers 429 itself and
// returns false.
//
// Headers and the 429 follow
// https://docs.gitlab.com/administration/settings/user_and_ip_rate_limits/#response-headers:
// RateLimit-Limit, -Name, -Observed, -Remaining (Limit - Observed), -Reset
// (Unix time), -ResetTime (RFC 2616 date) and, when throttled, Retry-After
// in seconds. Rack::Attack counts a throttled request too, so Observed may
// exceed Limit; the throttled body is plain text "Retry later".
func (s *Server) admit(w http.ResponseWriter, key string) bool {
	if s.limit.limit <= 0 {
		return true
	}
	now := time.Now()
	t := s.throttles[key]
	if t == nil || now.Sub(t.windowStart) >= s.limit.window {
		t = &throttle{windowStart: now}
		s.throttles[key] = t
	}
	t.observed++
	reset := t.windowStart.Add(s.limit.window)
	remaining := max(s.limit.limit-t.observed, 0)
	h := w.Header()
	h.Set("RateLimit-Name", "throttle_authenticated_api")
	h.Set("RateLimit-Limit", strconv.Itoa(s.limit.limit))
	h.Set("RateLimit-Observed", strconv.Itoa(t.observed))
	h.Set("RateLimit-Remaining", strconv.Itoa(remaining))
	h.Set("RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
	h.Set("RateLimit-ResetTime", reset.UTC().Format(http.TimeFormat))
	if t.observed <= s.limit.limit {
		return true
	}
	retryAfter := int(time.Until(reset).Round(time.Second) / time.Second)
	h.Set("Retry-After", strconv.Itoa(max(retryAfter, 1)))
	h.Set("Content-Type", "text/plain")
	w.WriteHeader(http.StatusTooManyRequests)
	_, _ = w.Write([]byte("Retry later\n"))
	return false
}
