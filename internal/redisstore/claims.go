package redisstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Claims are the per-branch ownership records that fence a branch's
// journal: "<prefix>claim:<branch>" holds the owning replica's token with
// a TTL. Membership and assignment (which replica should own a branch) are
// decided elsewhere, from Leases; a claim is what makes a deposed owner's
// late journal write fail instead of interleaving with the new owner's.
// The forge's compare-and-swap stays the fence for commits.
//
// A claim lives only as long as its owner renews it: an owner that loses
// Redis for a TTL loses its claims, and must stop journaling (Renew says
// which were lost) before another replica may acquire them.
type Claims struct {
	Client goredis.UniversalClient
	// Prefix starts every key (redisconn.Options.Prefix).
	Prefix string
}

func claimKey(prefix, branch string) string { return prefix + "claim:" + branch }

// acquireScript takes a free claim (SET NX PX) or refreshes one the token
// already holds, so an owner that retries an Acquire whose reply it lost
// does not lock itself out until the TTL runs out. It answers 1 when the
// token holds the claim, else minus the milliseconds the other holder's
// claim has left (0 or less).
var acquireScript = goredis.NewScript(`
local held = redis.call('GET', KEYS[1])
if held == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if held then
  local left = redis.call('PTTL', KEYS[1])
  if left < 0 then left = 0 end
  return -left
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
`)

// renewScript refreshes each claim the token still holds and answers, per
// key, 1 (renewed) or 0 (lost: expired, or held by another).
var renewScript = goredis.NewScript(`
local out = {}
for i, key in ipairs(KEYS) do
  if redis.call('GET', key) == ARGV[1] then
    redis.call('PEXPIRE', key, ARGV[2])
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
`)

// releaseScript deletes the claim only while the token holds it: a
// release that comes after the claim expired and another replica took it
// must not free the new owner's claim.
var releaseScript = goredis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`)

// Acquire claims branch for token for ttl. It reports false, with no
// error, when another token holds the claim; true when the claim is now
// token's (freshly taken, or already held and refreshed).
func (c *Claims) Acquire(ctx context.Context, branch, token string, ttl time.Duration) (bool, error) {
	won, _, err := c.TryAcquire(ctx, branch, token, ttl)
	return won, err
}

// TryAcquire is Acquire that also says, when another token holds the
// claim, how long that claim has left (it runs out then unless its holder
// renews it): a crashed owner's claim can outlive its Lease by up to a
// renew period, and the replica taking over tries again when it runs out.
func (c *Claims) TryAcquire(ctx context.Context, branch, token string, ttl time.Duration) (won bool, heldFor time.Duration, err error) {
	if ttl < time.Millisecond {
		return false, 0, fmt.Errorf("claiming branch %s for %s: a claim lasts at least a millisecond", branch, ttl)
	}
	n, err := acquireScript.Run(ctx, c.Client, []string{claimKey(c.Prefix, branch)}, token, ttl.Milliseconds()).Int64()
	if err != nil {
		return false, 0, fmt.Errorf("claiming branch %s: %w", branch, err)
	}
	if n == 1 {
		return true, 0, nil
	}
	return false, time.Duration(-n) * time.Millisecond, nil
}

// Renew refreshes, in one round trip, the claims token holds on branches
// and returns the branches whose claim it no longer holds: they expired
// (the owner was cut off from Redis for a TTL) or another replica took
// them. The owner must stop journaling for a lost branch at once.
func (c *Claims) Renew(ctx context.Context, token string, branches []string, ttl time.Duration) ([]string, error) {
	if len(branches) == 0 {
		return nil, nil
	}
	if ttl < time.Millisecond {
		return nil, fmt.Errorf("renewing branch claims for %s: a claim lasts at least a millisecond", ttl)
	}
	keys := make([]string, len(branches))
	for i, b := range branches {
		keys[i] = claimKey(c.Prefix, b)
	}
	kept, err := renewScript.Run(ctx, c.Client, keys, token, ttl.Milliseconds()).Int64Slice()
	if err != nil {
		return nil, fmt.Errorf("renewing %d branch claims: %w", len(branches), err)
	}
	var lost []string
	for i, k := range kept {
		if k == 0 {
			lost = append(lost, branches[i])
		}
	}
	return lost, nil
}

// Release gives up token's claim on branch, reporting whether it held it.
func (c *Claims) Release(ctx context.Context, branch, token string) (bool, error) {
	n, err := releaseScript.Run(ctx, c.Client, []string{claimKey(c.Prefix, branch)}, token).Int()
	if err != nil {
		return false, fmt.Errorf("releasing the claim on branch %s: %w", branch, err)
	}
	return n == 1, nil
}

// Owner is the token holding branch's claim, "" when nobody holds it.
func (c *Claims) Owner(ctx context.Context, branch string) (string, error) {
	token, err := c.Client.Get(ctx, claimKey(c.Prefix, branch)).Result()
	if errors.Is(err, goredis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading the claim on branch %s: %w", branch, err)
	}
	return token, nil
}
