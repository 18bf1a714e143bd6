// Package redisstore keeps the operator's small Redis records behind
// narrow interfaces: today the watch streams' resume cursors.
package redisstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// DefaultCursorTTL is how long a cursor outlives its last refresh. A live
// stream refreshes it with every event and bookmark (the API server sends
// a bookmark about every minute), so only a deleted target's cursors, or
// those of an operator stopped this long, expire.
const DefaultCursorTTL = time.Hour

// Cursors stores resume cursors as plain string keys
// "<prefix>cursor:<key>", each with a TTL. It implements mirror.CursorStore.
type Cursors struct {
	Client goredis.UniversalClient
	// Prefix starts every key (redisconn.Options.Prefix).
	Prefix string
	// TTL is DefaultCursorTTL when zero.
	TTL time.Duration
}

func (c *Cursors) redisKey(key string) string { return cursorKey(c.Prefix, key) }

func (c *Cursors) ttl() time.Duration { return cursorTTL(c.TTL) }

// cursorKey and cursorTTL are the one key scheme and TTL of a cursor, for
// Cursors and for the cursors a Journal append stores.
func cursorKey(prefix, key string) string { return prefix + "cursor:" + key }

func cursorTTL(ttl time.Duration) time.Duration {
	if ttl <= 0 {
		return DefaultCursorTTL
	}
	return ttl
}

// Load returns the cursor stored under key, "" when there is none.
func (c *Cursors) Load(ctx context.Context, key string) (string, error) {
	value, err := c.Client.Get(ctx, c.redisKey(key)).Result()
	if errors.Is(err, goredis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading the resume cursor %s: %w", key, err)
	}
	return value, nil
}

// Save stores every cursor with a fresh TTL, in one round trip.
func (c *Cursors) Save(ctx context.Context, values map[string]string) error {
	if len(values) == 0 {
		return nil
	}
	ttl := c.ttl()
	_, err := c.Client.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for key, value := range values {
			p.Set(ctx, c.redisKey(key), value, ttl)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("storing %d resume cursors: %w", len(values), err)
	}
	return nil
}

// Delete forgets keys.
func (c *Cursors) Delete(ctx context.Context, keys ...string) error {
	if len(keys) == 0 {
		return nil
	}
	redisKeys := make([]string, len(keys))
	for i, k := range keys {
		redisKeys[i] = c.redisKey(k)
	}
	if err := c.Client.Del(ctx, redisKeys...).Err(); err != nil {
		return fmt.Errorf("deleting resume cursors: %w", err)
	}
	return nil
}
