package github

import (
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Rate limits as "Rate limits for the REST API" documents them
// (https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api):
//
//   - primary: a number of requests per hour per credential; every response
//     carries x-ratelimit-limit, -remaining, -used, -reset (UTC epoch
//     seconds) and -resource; past the limit "you will receive a 403 or 429
//     response, and the x-ratelimit-remaining header will be 0".
//   - secondary: "no more than 80 content-generating requests per minute and
//     no more than 500 content-generating requests per hour"; past it "a 403
//     or 429 response and an error message that indicates that you exceeded
//     a secondary rate limit", with a retry-after header.

// primaryWindow is the primary limit's window: "requests per hour".
const primaryWindow = time.Hour

type primaryBucket struct {
	used  int
	reset time.Time
}

type limitState struct {
	primary map[string]*primaryBucket
	// content holds, per bucket, when each admitted content-creating request
	// was made within the last hour.
	content map[string][]time.Time
	// contentBlockedUntil refuses content creation by everyone until then
	// (BlockContentCreation).
	contentBlockedUntil time.Time
}

func newLimitState() limitState {
	return limitState{primary: map[string]*primaryBucket{}, content: map[string][]time.Time{}}
}

// admit counts the request against cred's budgets and writes the rate-limit
// headers. It answers the request itself, and returns false, when a limit
// is exceeded.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, cred *credential) bool {
	now := s.config.now()
	bucket := s.primaryBucket(cred.budget, now)
	exhausted := bucket.used >= s.config.primaryLimit
	if !exhausted {
		bucket.used++
	}
	s.writeLimitHeaders(w, bucket, s.config.primaryLimit)
	if exhausted {
		writeError(w, s.config.primaryStatus, s.primaryLimitMessage(cred), docPrimaryLimit)
		return false
	}
	if !createsContent(r.Method) {
		return true
	}
	if wait, limited := s.contentWait(cred.budget, now); limited {
		// "If the retry-after response header is present, you should not
		// retry your request until after that many seconds has elapsed."
		w.Header().Set("Retry-After", strconv.Itoa(int((wait+time.Second-1)/time.Second)))
		writeError(w, http.StatusForbidden, "You have exceeded a secondary rate limit and have been temporarily "+
			"blocked from content creation. Please retry your request again later.", docSecondaryLimit)
		return false
	}
	s.limits.content[cred.budget] = append(s.limits.content[cred.budget], now)
	return true
}

// createsContent: the secondary limit's "content-generating requests" are
// the REST API's POST, PATCH, PUT and DELETE requests (the documented point
// table prices exactly these methods higher).
func createsContent(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPatch, http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}

func (s *Server) primaryBucket(name string, now time.Time) *primaryBucket {
	bucket, ok := s.limits.primary[name]
	if !ok || !now.Before(bucket.reset) {
		bucket = &primaryBucket{reset: now.Add(primaryWindow).Truncate(time.Second)}
		s.limits.primary[name] = bucket
	}
	return bucket
}

// unauthenticatedLimit: "The primary rate limit for unauthenticated
// requests is 60 requests per hour."
const unauthenticatedLimit = 60

// countUnauthenticated counts a request without valid credentials against
// the unauthenticated budget and writes its headers. The simulator has one
// such budget (GitHub keeps one per IP address).
func (s *Server) countUnauthenticated(w http.ResponseWriter) {
	bucket := s.primaryBucket("unauthenticated", s.config.now())
	bucket.used++
	s.writeLimitHeaders(w, bucket, unauthenticatedLimit)
}

func (s *Server) writeLimitHeaders(w http.ResponseWriter, bucket *primaryBucket, limit int) {
	h := w.Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(max(limit-bucket.used, 0)))
	h.Set("X-RateLimit-Used", strconv.Itoa(bucket.used))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(bucket.reset.Unix(), 10))
	// Git Database endpoints count against the "core" resource.
	h.Set("X-RateLimit-Resource", "core")
}

// primaryLimitMessage is GitHub's wording, which names the installation for
// installation tokens.
func (s *Server) primaryLimitMessage(cred *credential) string {
	if cred.kind == "installation" {
		return fmt.Sprintf("API rate limit exceeded for installation ID %d.", cred.installationID)
	}
	return "API rate limit exceeded for user ID 1."
}

// contentWait reports how long bucket must wait before its next
// content-creating request fits both the per-minute and per-hour limits
// and any block on content creation has ended.
func (s *Server) contentWait(bucket string, now time.Time) (time.Duration, bool) {
	var recent []time.Time
	for _, at := range s.limits.content[bucket] {
		if now.Sub(at) < time.Hour {
			recent = append(recent, at)
		}
	}
	s.limits.content[bucket] = recent
	wait := windowWait(recent, now, time.Minute, s.config.contentPerMinute)
	wait = max(wait, windowWait(recent, now, time.Hour, s.config.contentPerHour))
	wait = max(wait, s.limits.contentBlockedUntil.Sub(now))
	return wait, wait > 0
}

// windowWait: with events sorted by time, the request must wait until
// enough of those within window have aged out to leave room for one more.
// A limit of zero or less is no limit.
func windowWait(events []time.Time, now time.Time, window time.Duration, limit int) time.Duration {
	if limit <= 0 {
		return 0
	}
	var inWindow []time.Time
	for _, at := range events {
		if now.Sub(at) < window {
			inWindow = append(inWindow, at)
		}
	}
	if len(inWindow) < limit {
		return 0
	}
	oldestToExpire := inWindow[len(inWindow)-limit]
	return oldestToExpire.Add(window).Sub(now)
}
