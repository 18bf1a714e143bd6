package gitea

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// A commit whose connection is cut (or whose process is killed) between
// ChangeFiles and the scratch branch's deletion leaves the scratch branch
// behind. The client sweeps such leftovers after a successful commit, at
// most once per scratchSweepInterval, the first an interval after it was
// made: a leftover is deleted only once it is stale, so an earlier sweep
// would find nothing a crash just left, and the commits of a client's first
// hour keep their fixed request count. The one commit an hour that sweeps
// pays for the branch listing and deletes (bounded by a timeout of its own).
// Several writers may share a repository (two operators, a pod being
// replaced), so a sweep deletes only what is clearly stale: a scratch
// branch created more than staleScratchAge ago. A commit takes seconds
// (each request is bounded by the HTTP timeout), so no writer's commit in
// flight is that old, the creator's clock skew included.
const (
	staleScratchAge      = time.Hour
	scratchSweepInterval = time.Hour
	// branchPageSize is the branches asked for per page; Gitea may cap it
	// lower (API.MAX_RESPONSE_ITEMS), so paging stops at an empty page.
	branchPageSize = 50
	// maxBranchPages bounds one sweep's listing: a repository with more
	// branches is swept in part, the rest at a later sweep.
	maxBranchPages = 40
)

// scratchBranchName is a branch name no other commit uses, carrying the
// time it was made (Unix seconds) so that any writer can tell its age:
// gitops-reverser-cas-<seconds>-<random>.
func (c *Client) scratchBranchName() (string, error) {
	random := make([]byte, 8)
	if _, err := rand.Read(random); err != nil {
		return "", fmt.Errorf("naming a scratch branch: %w", err)
	}
	return scratchBranchPrefix + strconv.FormatInt(c.now().Unix(), 10) + "-" + hex.EncodeToString(random), nil
}

// scratchCreatedAt is when a scratch branch was made: from its name, or,
// for a name of an earlier release (gitops-reverser-cas-<random>, no
// time), from the date of the commit it points at. ok is false for a name
// that is not a scratch branch.
func scratchCreatedAt(branch branchListEntry) (time.Time, bool) {
	rest, found := strings.CutPrefix(branch.Name, scratchBranchPrefix)
	if !found {
		return time.Time{}, false
	}
	if seconds, random, timed := strings.Cut(rest, "-"); timed {
		at, err := strconv.ParseInt(seconds, 10, 64)
		if err != nil || !isHex(random) {
			return time.Time{}, false
		}
		return time.Unix(at, 0), true
	}
	if !isHex(rest) || branch.Commit.Timestamp.IsZero() {
		return time.Time{}, false
	}
	return branch.Commit.Timestamp, true
}

func isHex(s string) bool {
	_, err := hex.DecodeString(s)
	return s != "" && err == nil
}

// sweepDue reports whether this commit should sweep, and if so moves the
// next sweep an interval on, so concurrent commits sweep once.
func (c *Client) sweepDue() bool {
	c.sweep.Lock()
	defer c.sweep.Unlock()
	now := c.now()
	if now.Before(c.sweep.next) {
		return false
	}
	c.sweep.next = now.Add(scratchSweepInterval)
	return true
}

// sweepStaleScratch deletes the stale scratch branches of the repository.
// It is housekeeping: a failure is not the commit's, and the next sweep
// tries again.
func (c *Client) sweepStaleScratch(ctx context.Context) {
	if !c.sweepDue() {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), scratchCleanupTimeout)
	defer cancel()
	cutoff := c.now().Add(-staleScratchAge)
	for page := 1; page <= maxBranchPages; page++ {
		var branches []branchListEntry
		query := url.Values{"page": {strconv.Itoa(page)}, "limit": {strconv.Itoa(branchPageSize)}}
		if err := c.call(ctx, http.MethodGet, c.repoPath("/branches"), query, nil, &branches); err != nil || len(branches) == 0 {
			return
		}
		for _, branch := range branches {
			if created, ok := scratchCreatedAt(branch); ok && created.Before(cutoff) {
				// Deleting shifts later branches a page down; the next
				// sweep finds what this one skips.
				_ = c.call(ctx, http.MethodDelete, c.repoPath("/branches/"+escapeRef(branch.Name)), nil, nil, nil)
			}
		}
	}
}
