// Package redis is the Redis Streams fact transport
// (--author-attribution-transport=redis): one Redis stream per
// facts.StreamKey, which every process follows in full (no consumer
// groups), so facts outlive a process and reach every replica
// (architecture.md, "Optional attribution"). It speaks to a standalone
// Redis or Valkey; a cluster is not supported.
package redis

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"k8s.io/utils/clock"

	"github.com/configbutler/gitops-reverser/internal/facts"
	"github.com/configbutler/gitops-reverser/internal/redisconn"
)

// Defaults for the zero fields of Options.
const (
	// DefaultMaxLen matches the in-process ring's bound per stream.
	DefaultMaxLen = 10_000
	// DefaultBlock is how long one blocking read waits before it is issued
	// again; cancelling a follow does not wait for it.
	DefaultBlock = 2 * time.Second
	// DefaultReadCount bounds how many facts one read returns, and so one
	// delivery.
	DefaultReadCount = 1000
)

// Options configure a Transport.
type Options struct {
	// Prefix starts every key, one per installation;
	// redisconn.DefaultKeyPrefix, the operator's, when "".
	Prefix string
	// MaxLen bounds each stream (trimmed approximately, "MAXLEN ~");
	// DefaultMaxLen when zero.
	MaxLen int64
	// Retention is how long a fact stays deliverable, one fact TTL: every
	// publish trims the stream of facts older than it ("MINID ~"), and a
	// new follower is never given one published longer ago. Zero keeps
	// facts until MaxLen pushes them out.
	Retention time.Duration
	// Block is how long one blocking read waits; DefaultBlock when zero.
	Block time.Duration
	// ReadCount bounds the facts of one read; DefaultReadCount when zero.
	ReadCount int64
	// DecodeError, when set, is called with every stream entry a follower
	// could not decode and skipped (for the decode error metric).
	DecodeError func(error)
	// Clock gives the publish time the retention trim and a new follower's
	// earliest fact are measured from; the real clock when nil. Stream ids
	// carry the Redis server's clock, so the two are assumed to agree to
	// well within one Retention.
	Clock clock.PassiveClock
}

// Transport carries facts through Redis Streams. The stream of key k is
// "<Prefix>facts:<route>:<group>/<resource>". Each entry holds the fact's
// sequence number in its stream and the fact as versioned JSON.
//
// Publish appends all of one call's facts in one atomic round trip (a
// script), numbering them after the stream's last entry and trimming the
// stream by MaxLen and Retention. A follower reads with a blocking XREAD on
// a connection of its own, which cancelling its ctx closes. Facts a trim
// removed before a follower read them show as a jump in the sequence
// numbers and are reported to gap with their exact count; a stream that
// was deleted and begun again (its numbers start over) is reported as
// gap(0), count unknown.
type Transport struct {
	redisOpts *goredis.Options
	client    *goredis.Client
	opts      Options

	mu sync.Mutex
	// delivered is how far this process's follows have delivered each
	// stream (AwaitDelivered).
	delivered map[facts.StreamKey]*deliveredUpTo
}

var (
	_ facts.Transport = (*Transport)(nil)
	_ facts.Barrier   = (*Transport)(nil)
)

// New returns a transport that connects with redisOpts (address, TLS, ACL
// user and password). Close releases its connections.
func New(redisOpts *goredis.Options, opts Options) *Transport {
	if opts.Prefix == "" {
		opts.Prefix = redisconn.DefaultKeyPrefix
	}
	if opts.MaxLen <= 0 {
		opts.MaxLen = DefaultMaxLen
	}
	if opts.Block <= 0 {
		opts.Block = DefaultBlock
	}
	if opts.ReadCount <= 0 {
		opts.ReadCount = DefaultReadCount
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Transport{redisOpts: redisOpts, client: goredis.NewClient(redisOpts), opts: opts}
}

// Close closes the publish connections. Follows end with their ctx.
func (t *Transport) Close() error { return t.client.Close() }

// Key is the Redis key of stream k.
func (t *Transport) Key(k facts.StreamKey) string {
	return t.opts.Prefix + "facts:" + k.Route + ":" + k.Group + "/" + k.Resource
}

// publishScript appends ARGV[3..] to stream KEYS[1], numbered after the
// stream's last entry, each XADD trimming by MAXLEN ~ ARGV[1], then trims
// by MINID ~ ARGV[2] unless it is "". The trim by time comes last and the
// newest entry always outlives it (its id is now, past the minimum id), so
// the numbering never loses its place while the stream exists.
var publishScript = goredis.NewScript(`
local n = 0
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
if #last > 0 then
  local fields = last[1][2]
  for i = 1, #fields, 2 do
    if fields[i] == 'n' then n = tonumber(fields[i + 1]) or 0 end
  end
end
for i = 3, #ARGV do
  n = n + 1
  redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 'n', n, 'f', ARGV[i])
end
if ARGV[2] ~= '' then
  redis.call('XTRIM', KEYS[1], 'MINID', '~', ARGV[2])
end
return n
`)

// Publish appends fs to key's stream in one round trip. It does not wait
// for any follower.
func (t *Transport) Publish(ctx context.Context, key facts.StreamKey, fs []facts.Fact) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(fs) == 0 {
		return nil
	}
	minID := ""
	if t.opts.Retention > 0 {
		minID = strconv.FormatInt(t.opts.Clock.Now().Add(-t.opts.Retention).UnixMilli(), 10)
	}
	args := make([]any, 0, 2+len(fs))
	args = append(args, t.opts.MaxLen, minID)
	for _, f := range fs {
		enc, err := encodeFact(f)
		if err != nil {
			return err
		}
		args = append(args, enc)
	}
	if err := publishScript.Run(ctx, t.client, []string{t.Key(key)}, args...).Err(); err != nil {
		return fmt.Errorf("publishing %d facts to %s: %w", len(fs), key, err)
	}
	return nil
}

// Follow delivers key's retained facts published at or after since (to the
// millisecond: a fact of since's own millisecond is delivered even when it
// came a little before since) and not older than Retention, then every fact
// published later, until ctx ends.
func (t *Transport) Follow(ctx context.Context, key facts.StreamKey, since time.Time,
	deliver func([]facts.Fact), gap func(lost int)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	// A connection of the follow's own: closing it is what ends a blocking
	// read when ctx ends, which go-redis does not do by itself.
	conn := goredis.NewClient(t.followerOptions())
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()

	f := follower{key: key, redisKey: t.Key(key), lastID: t.startID(since), deliver: deliver, gap: gap,
		decodeError: t.opts.DecodeError}
	// What lies before the start is not this follow's to deliver: older
	// than since, or than one Retention.
	t.advance(key, f.lastID)
	for {
		streams, err := conn.XRead(ctx, &goredis.XReadArgs{
			Streams: []string{f.redisKey, f.lastID}, Count: t.opts.ReadCount, Block: t.opts.Block,
		}).Result()
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		if errors.Is(err, goredis.Nil) {
			continue // nothing new within Block
		}
		if err != nil {
			return fmt.Errorf("reading facts of %s: %w", key, err)
		}
		for _, s := range streams {
			f.handle(s.Messages)
		}
		t.advance(key, f.lastID)
	}
}

func (t *Transport) followerOptions() *goredis.Options {
	o := *t.redisOpts
	o.PoolSize, o.MinIdleConns, o.MaxIdleConns = 1, 0, 1
	return &o
}

// startID is the exclusive XREAD id just before the first entry a new
// follower from since is given: the later of since and now less Retention.
func (t *Transport) startID(since time.Time) string {
	var fromMs int64
	if !since.IsZero() {
		fromMs = since.UnixMilli()
	}
	if t.opts.Retention > 0 {
		if oldest := t.opts.Clock.Now().Add(-t.opts.Retention).UnixMilli(); oldest > fromMs {
			fromMs = oldest
		}
	}
	if fromMs <= 0 {
		return "0-0"
	}
	return strconv.FormatInt(fromMs-1, 10) + "-" + strconv.FormatUint(math.MaxUint64, 10)
}

// follower is one Follow's position in its stream.
type follower struct {
	key         facts.StreamKey
	redisKey    string
	lastID      string
	lastSeq     uint64 // 0 until the first numbered entry is read
	deliver     func([]facts.Fact)
	gap         func(lost int)
	decodeError func(error)
}

// handle delivers one read's entries in order, with a gap before the first
// entry whose number is not the one after the last.
func (f *follower) handle(msgs []goredis.XMessage) {
	var batch []facts.Fact
	for _, m := range msgs {
		f.lastID = m.ID
		seq, fact, err := decodeEntry(f.key, m.Values)
		if seq != 0 {
			if lost, ok := f.lost(seq); ok {
				if len(batch) > 0 {
					f.deliver(batch)
					batch = nil
				}
				f.gap(lost)
			}
			f.lastSeq = seq
		}
		if err != nil {
			if f.decodeError != nil {
				f.decodeError(fmt.Errorf("stream %s entry %s: %w", f.redisKey, m.ID, err))
			}
			continue
		}
		batch = append(batch, fact)
	}
	if len(batch) > 0 {
		f.deliver(batch)
	}
}

// lost says how many facts were trimmed between the last entry read and
// the one numbered seq. The first entry read is no gap: a new follower
// starts at the oldest fact retained.
func (f *follower) lost(seq uint64) (int, bool) {
	switch {
	case f.lastSeq == 0 || seq == f.lastSeq+1:
		return 0, false
	case seq <= f.lastSeq: // the stream was deleted and begun again
		return 0, true
	default:
		return int(seq - f.lastSeq - 1), true
	}
}
