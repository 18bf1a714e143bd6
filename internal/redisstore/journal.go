package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"k8s.io/utils/clock"
)

// ErrNotOwner is returned, wrapped, by a journal write whose token does not
// hold the branch's claim (Claims): nothing of the write was applied. The
// caller has lost the branch and must stop writing to it.
var ErrNotOwner = errors.New("the branch's claim is not held by this owner")

// ErrClaimExpired is the ErrNotOwner of a claim nobody holds: it expired
// while its owner could not renew it (Redis down for every replica), and
// nothing was applied. Its owner may win it again (the assigner tries at
// its next renewal) and write on; it is errors.Is ErrNotOwner for callers
// that need not tell the two apart.
var ErrClaimExpired = fmt.Errorf("%w: nobody holds it (it expired)", ErrNotOwner)

// DefaultJournalPage is how many entries Read fetches per round trip.
const DefaultJournalPage = 1000

// DefaultJournalBatch is the most entries one Append script adds: a script
// blocks Redis while it runs, so a replay's thousands of writes go in
// several scripts of this size (see Append).
const DefaultJournalBatch = 500

// entryField is the one field of a journal stream entry.
const entryField = "d"

// Journal is a branch's durable write queue: a Redis stream per branch,
// "<prefix>journal:<branch>", whose entries are the branch core's journaled
// events (branch.EncodeJournal) in the order the core took them. Every
// write is fenced by the branch's claim (Claims): a replica that lost the
// claim gets ErrNotOwner and changes nothing.
//
// It needs one standalone Redis (the scripts touch the claim, the stream
// and the cursors together, which a Cluster would refuse across slots),
// and Redis 6.2 or later (XTRIM MINID, exclusive XRANGE).
type Journal struct {
	Client goredis.UniversalClient
	// Prefix starts every key (redisconn.Options.Prefix); the cursors an
	// Append stores are the ones Cursors with the same Prefix loads.
	Prefix string
	// CursorTTL is what Cursors.TTL is; DefaultCursorTTL when zero.
	CursorTTL time.Duration
	// Page is DefaultJournalPage, Batch DefaultJournalBatch when zero.
	Page, Batch int
	// Clock tells a journal's age (Stats); the real clock when nil.
	Clock clock.PassiveClock
}

// JournalEntry is one entry as Read returns it.
type JournalEntry struct {
	// ID is the stream entry ID ("<ms>-<seq>"), which Trim takes.
	ID   string
	Data []byte
}

// JournalStats are what metrics show of a branch's journal.
type JournalStats struct {
	// Depth is how many entries wait for their commit.
	Depth int64
	// Age is how long the oldest entry has waited (by Redis's clock, which
	// stamped its ID), 0 when the journal is empty.
	Age time.Duration
}

func journalKey(prefix, branch string) string { return prefix + "journal:" + branch }

// fenceLua starts every script that writes a journal: KEYS[1] is the
// branch's claim, ARGV[1] the writer's token, and a writer that does not
// hold the claim is refused before anything is written.
const fenceLua = `
local holder = redis.call('GET', KEYS[1])
if holder ~= ARGV[1] then
  if not holder then
    return redis.error_reply('NOCLAIM the branch claim is held by nobody')
  end
  return redis.error_reply('NOTOWNER the branch claim is not held by this token')
end`

// appendScript: KEYS = claim, stream, cursor keys...; ARGV = token, cursor
// TTL in ms, entry count n, n entries, then one value per cursor key. It
// checks everything that could fail before it writes anything, because a
// Lua error does not roll back what the script already wrote.
var appendScript = goredis.NewScript(fenceLua + `
local t = redis.call('TYPE', KEYS[2])['ok']
if t ~= 'none' and t ~= 'stream' then
  return redis.error_reply('JOURNALTYPE ' .. t)
end
local n = tonumber(ARGV[3])
local ids = {}
for i = 1, n do
  ids[i] = redis.call('XADD', KEYS[2], '*', 'd', ARGV[3 + i])
end
for i = 3, #KEYS do
  redis.call('SET', KEYS[i], ARGV[3 + n + i - 2], 'PX', ARGV[2])
end
return ids
`)

// trimScript: KEYS = claim, stream; ARGV = token, MINID ("" for none), IDs
// to delete. It answers how many entries it removed.
var trimScript = goredis.NewScript(fenceLua + `
local removed = 0
if ARGV[2] ~= '' then
  removed = redis.call('XTRIM', KEYS[2], 'MINID', ARGV[2])
end
-- one XDEL an ID: unpack() of thousands of IDs would overflow Lua's stack
for i = 3, #ARGV do
  removed = removed + redis.call('XDEL', KEYS[2], ARGV[i])
end
return removed
`)

// Append adds entries to branch's journal and stores cursors, atomically
// and only while token holds the branch's claim, and returns the entries'
// IDs in order. A cursor is therefore never stored ahead of the writes it
// advances past: either both are in Redis or neither is.
//
// Cursors are stored as Cursors.Save stores them (same keys, same TTL), so
// Cursors.Load reads them. More than Batch entries go in several scripts,
// the cursors with the last: a failure part way leaves entries journaled
// without their cursors, which costs the watch re-delivering them (their
// replay changes nothing a second time), never a cursor ahead of a write.
// On an error the IDs returned are those of the scripts that went through.
func (j *Journal) Append(ctx context.Context, branch, token string, entries [][]byte, cursors map[string]string) ([]string, error) {
	batch := j.Batch
	if batch <= 0 {
		batch = DefaultJournalBatch
	}
	ids := make([]string, 0, len(entries))
	for start := 0; ; start += batch {
		end := min(start+batch, len(entries))
		last := end == len(entries)
		var withCursors map[string]string
		if last {
			withCursors = cursors
		}
		got, err := j.appendOnce(ctx, branch, token, entries[start:end], withCursors)
		ids = append(ids, got...)
		if err != nil || last {
			return ids, err
		}
	}
}

func (j *Journal) appendOnce(ctx context.Context, branch, token string, entries [][]byte, cursors map[string]string) ([]string, error) {
	if len(entries) == 0 && len(cursors) == 0 {
		return nil, nil
	}
	keys := make([]string, 0, 2+len(cursors))
	keys = append(keys, claimKey(j.Prefix, branch), journalKey(j.Prefix, branch))
	args := make([]any, 0, 3+len(entries)+len(cursors))
	args = append(args, token, cursorTTL(j.CursorTTL).Milliseconds(), len(entries))
	for _, e := range entries {
		args = append(args, e)
	}
	for key, value := range cursors {
		keys = append(keys, cursorKey(j.Prefix, key))
		args = append(args, value)
	}
	ids, err := appendScript.Run(ctx, j.Client, keys, args...).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("journaling %d writes and %d cursors of branch %s: %w", len(entries), len(cursors), branch,
			scriptError(err))
	}
	return ids, nil
}

// scriptError names a script's own refusals with this package's errors.
func scriptError(err error) error {
	// Redis may put its generic "ERR " before a script's error code.
	code := strings.TrimPrefix(err.Error(), "ERR ")
	if strings.HasPrefix(code, "NOTOWNER") {
		return ErrNotOwner
	}
	if strings.HasPrefix(code, "NOCLAIM") {
		return ErrClaimExpired
	}
	return err
}

// Trim removes, while token holds the claim, every entry up to and
// including upTo ("" for none) and the entries ids (those of windows
// committed while an older window still waits), in one round trip, and
// reports how many it removed. branch.JournalIndex.Settle says what to
// pass once a commit went through.
func (j *Journal) Trim(ctx context.Context, branch, token, upTo string, ids ...string) (int64, error) {
	minID := ""
	if upTo != "" {
		next, err := nextID(upTo)
		if err != nil {
			return 0, err
		}
		minID = next
	}
	if minID == "" && len(ids) == 0 {
		return 0, nil
	}
	args := make([]any, 0, 2+len(ids))
	args = append(args, token, minID)
	for _, id := range ids {
		args = append(args, id)
	}
	keys := []string{claimKey(j.Prefix, branch), journalKey(j.Prefix, branch)}
	n, err := trimScript.Run(ctx, j.Client, keys, args...).Int64()
	if err != nil {
		return 0, fmt.Errorf("trimming the journal of branch %s: %w", branch, scriptError(err))
	}
	return n, nil
}

// nextID is the smallest stream ID after id: XTRIM MINID keeps entries at
// or above it, so trimming to it removes id itself.
func nextID(id string) (string, error) {
	ms, seq, ok := strings.Cut(id, "-")
	if !ok {
		return "", fmt.Errorf("%q is not a stream entry ID", id)
	}
	m, err := strconv.ParseUint(ms, 10, 64)
	if err != nil {
		return "", fmt.Errorf("%q is not a stream entry ID: %w", id, err)
	}
	s, err := strconv.ParseUint(seq, 10, 64)
	if err != nil {
		return "", fmt.Errorf("%q is not a stream entry ID: %w", id, err)
	}
	if s == ^uint64(0) {
		return strconv.FormatUint(m+1, 10) + "-0", nil
	}
	return ms + "-" + strconv.FormatUint(s+1, 10), nil
}

// dropSettledScript deletes the journal only when it holds no entry,
// fenced like the others; it answers the depth it refused at.
var dropSettledScript = goredis.NewScript(fenceLua + `
local depth = redis.call('XLEN', KEYS[2])
if depth > 0 then
  return depth
end
redis.call('DEL', KEYS[2])
return 0
`)

// ErrJournalUnsettled is DropSettled's answer for a journal that still
// holds entries: writes whose commit did not go through.
var ErrJournalUnsettled = errors.New("the journal still holds writes not in Git")

// DropSettled deletes branch's journal while token holds the claim, only
// when every entry was trimmed (every accepted write is in Git): a branch
// no GitTarget writes any more whose last commit failed keeps what it
// journaled (ErrJournalUnsettled) rather than losing it.
func (j *Journal) DropSettled(ctx context.Context, branch, token string) error {
	keys := []string{claimKey(j.Prefix, branch), journalKey(j.Prefix, branch)}
	depth, err := dropSettledScript.Run(ctx, j.Client, keys, token).Int64()
	if err != nil {
		return fmt.Errorf("dropping the journal of branch %s: %w", branch, scriptError(err))
	}
	if depth > 0 {
		return fmt.Errorf("dropping the journal of branch %s, which holds %d entries: %w", branch, depth, ErrJournalUnsettled)
	}
	return nil
}

// Read returns branch's journal, oldest first, fetching Page entries a
// round trip so a deep journal does not come back as one reply. It is not
// fenced: a new owner reads before it writes, once it holds the claim.
func (j *Journal) Read(ctx context.Context, branch string) ([]JournalEntry, error) {
	page := j.Page
	if page <= 0 {
		page = DefaultJournalPage
	}
	key := journalKey(j.Prefix, branch)
	var out []JournalEntry
	for start := "-"; ; {
		msgs, err := j.Client.XRangeN(ctx, key, start, "+", int64(page)).Result()
		if err != nil {
			return nil, fmt.Errorf("reading the journal of branch %s: %w", branch, err)
		}
		for _, m := range msgs {
			data, _ := m.Values[entryField].(string)
			out = append(out, JournalEntry{ID: m.ID, Data: []byte(data)})
		}
		if len(msgs) < page {
			return out, nil
		}
		start = "(" + msgs[len(msgs)-1].ID
	}
}

// Stats reads the journal's depth and age in one round trip.
func (j *Journal) Stats(ctx context.Context, branch string) (JournalStats, error) {
	key := journalKey(j.Prefix, branch)
	var length *goredis.IntCmd
	var first *goredis.XMessageSliceCmd
	_, err := j.Client.Pipelined(ctx, func(p goredis.Pipeliner) error {
		length = p.XLen(ctx, key)
		first = p.XRangeN(ctx, key, "-", "+", 1)
		return nil
	})
	if err != nil {
		return JournalStats{}, fmt.Errorf("reading the journal depth of branch %s: %w", branch, err)
	}
	stats := JournalStats{Depth: length.Val()}
	if msgs := first.Val(); len(msgs) > 0 {
		stats.Age = EntryAge(j.clock().Now(), msgs[0].ID)
	}
	return stats, nil
}

// EntryAge is how long ago the entry id was stamped, 0 when the ID is
// unreadable or (clocks apart) in the future.
func EntryAge(now time.Time, id string) time.Duration {
	ms, _, _ := strings.Cut(id, "-")
	stamp, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return 0
	}
	return max(now.Sub(time.UnixMilli(stamp)), 0)
}

func (j *Journal) clock() clock.PassiveClock {
	if j.Clock == nil {
		return clock.RealClock{}
	}
	return j.Clock
}
