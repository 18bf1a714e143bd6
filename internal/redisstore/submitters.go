package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/configbutler/gitops-reverser/internal/facts"
)

// DefaultSubmitterTTL keeps a CommitRequest's submitter as long as the
// in-process record does (admission.DefaultSubmittersTTL).
const DefaultSubmitterTTL = time.Hour

// Submitters stores the submitter the admission webhook named for a
// CommitRequest under "<prefix>submitter:<uid>", so a replica other than
// the one that served the webhook can read it. It implements
// admission.SharedSubmitters.
type Submitters struct {
	Client goredis.UniversalClient
	Prefix string
	// TTL is DefaultSubmitterTTL when zero.
	TTL time.Duration
}

func (s *Submitters) redisKey(uid string) string { return s.Prefix + "submitter:" + uid }

// submitterRecord is the stored form: versioned, so a later shape can be
// told apart.
type submitterRecord struct {
	V     int         `json:"v"`
	Actor facts.Actor `json:"actor"`
}

// Record stores actor as the submitter of the CommitRequest uid.
func (s *Submitters) Record(ctx context.Context, uid string, actor facts.Actor) error {
	value, err := json.Marshal(submitterRecord{V: 1, Actor: actor})
	if err != nil {
		return fmt.Errorf("encoding the submitter of CommitRequest %s: %w", uid, err)
	}
	ttl := s.TTL
	if ttl <= 0 {
		ttl = DefaultSubmitterTTL
	}
	if err := s.Client.Set(ctx, s.redisKey(uid), value, ttl).Err(); err != nil {
		return fmt.Errorf("storing the submitter of CommitRequest %s: %w", uid, err)
	}
	return nil
}

// Submitter reads the submitter of the CommitRequest uid; false when none
// is stored.
func (s *Submitters) Submitter(ctx context.Context, uid string) (facts.Actor, bool, error) {
	value, err := s.Client.Get(ctx, s.redisKey(uid)).Bytes()
	if errors.Is(err, goredis.Nil) {
		return facts.Actor{}, false, nil
	}
	if err != nil {
		return facts.Actor{}, false, fmt.Errorf("reading the submitter of CommitRequest %s: %w", uid, err)
	}
	var rec submitterRecord
	if err := json.Unmarshal(value, &rec); err != nil || rec.V != 1 {
		return facts.Actor{}, false, fmt.Errorf("reading the submitter of CommitRequest %s: an unreadable record", uid)
	}
	return rec.Actor, true, nil
}
