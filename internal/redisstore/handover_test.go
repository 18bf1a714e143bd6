package redisstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/branch"
	"github.com/configbutler/gitops-reverser/internal/manifest"
	"github.com/configbutler/gitops-reverser/internal/redisstore"
)

// owning is one replica's side of a branch as the engine will run it: a
// core, its journal index, and every journaled event appended with the
// cursor it advances, under the replica's claim.
type owning struct {
	t       *testing.T
	token   string
	core    *branch.Core
	index   branch.JournalIndex
	journal *redisstore.Journal
	rv      int
}

var (
	handoverTarget = branch.TargetKey{Namespace: "team", Name: "mirror"}
	alice          = branch.Author{Name: "Alice", Email: "alice@example.com", Kind: branch.AuthorUser}
	bob            = branch.Author{Name: "Bob", Email: "bob@example.com", Kind: branch.AuthorUser}
	t0             = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
)

func handoverCore() *branch.Core {
	c := branch.NewCore(branch.CoreConfig{Committer: branch.Author{Name: "ops"}, BufferMax: 1 << 20, PushBurst: 3,
		PushInterval: time.Second, RetryBackoff: time.Second, MaxRetryBackoff: time.Minute})
	c.Silence = 5 * time.Second
	return c
}

func configMap(name, value string) branch.Write {
	return branch.Write{ID: manifest.ObjectID{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "team", Name: name},
		YAML: fmt.Appendf(nil, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: team\ndata:\n  v: %q\n", name, value)}
}

func (o *owning) step(at time.Duration, ev branch.Event) error {
	ctx := context.Background()
	now := t0.Add(at)
	o.core.Step(now, ev)
	rec := branch.JournalRecord{At: now, Window: o.core.LastWindow(), Event: ev}
	data, ok, err := branch.EncodeJournal(rec)
	require.NoError(o.t, err)
	if ok {
		o.rv++
		ids, err := o.journal.Append(ctx, mainBranch, o.token, [][]byte{data},
			map[string]string{"uid:/v1/configmaps:team": fmt.Sprintf("f %d h", o.rv)})
		if err != nil {
			return err
		}
		o.index.Add(ids[0], rec)
	}
	if _, committed := ev.(branch.CommittedEvent); committed {
		trim := o.index.Settle(o.core.HeldWindows())
		if _, err := o.journal.Trim(ctx, mainBranch, o.token, trim.UpTo, trim.Delete...); err != nil {
			return err
		}
	}
	return nil
}

// held is the windows a core holds, from its journaled state.
func held(t *testing.T, c *branch.Core) string {
	t.Helper()
	data, err := json.Marshal(c)
	require.NoError(t, err)
	var state struct{ Window, Pending json.RawMessage }
	require.NoError(t, json.Unmarshal(data, &state))
	out, err := json.Marshal(state)
	require.NoError(t, err)
	return string(out)
}

func TestABranchHandedOverAfterItsOwnerDiedIsRestoredAndTheOldOwnerFenced(t *testing.T) {
	_, client := startRedis(t)
	ctx := context.Background()
	claims := &redisstore.Claims{Client: client, Prefix: "blue:"}
	journal := &redisstore.Journal{Client: client, Prefix: "blue:"}
	got, err := claims.Acquire(ctx, mainBranch, "replica-a", 2*time.Second)
	require.NoError(t, err)
	require.True(t, got)

	a := &owning{t: t, token: "replica-a", core: handoverCore(), journal: journal}
	for _, s := range []struct {
		at time.Duration
		ev branch.Event
	}{
		{0, branch.WriteEvent{Target: handoverTarget, Author: alice, Write: configMap("one", "1")}},
		{time.Second, branch.WriteEvent{Target: handoverTarget, Author: alice, Write: configMap("one", "2")}},
		{2 * time.Second, branch.WriteEvent{Target: handoverTarget, Author: bob, Write: configMap("two", "1")}}, // alice's window goes out
		{3 * time.Second, branch.WriteEvent{Target: handoverTarget, Author: alice, Write: configMap("one", "3")}},
		{4 * time.Second, branch.CommittedEvent{Windows: []branch.WindowResult{{Seq: 0, Committed: true, Commit: "c0"}}}},
		{5 * time.Second, branch.WriteEvent{Target: handoverTarget, Author: alice, Write: configMap("three", "1")}},
	} {
		require.NoError(t, a.step(s.at, s.ev))
		lost, err := claims.Renew(ctx, "replica-a", []string{mainBranch}, 2*time.Second) // a live owner renews
		require.NoError(t, err)
		require.Empty(t, lost)
	}
	entries, err := journal.Read(ctx, mainBranch)
	require.NoError(t, err)
	require.Len(t, entries, 3, "alice's committed window was trimmed")

	// Replica A dies: it renews no more, and its claim runs out.
	require.Eventually(t, func() bool {
		owner, err := claims.Owner(ctx, mainBranch)
		return err == nil && owner == ""
	}, 10*time.Second, 20*time.Millisecond)
	got, err = claims.Acquire(ctx, mainBranch, "replica-b", time.Minute)
	require.NoError(t, err)
	require.True(t, got)

	entries, err = journal.Read(ctx, mainBranch)
	require.NoError(t, err)
	items := make([]branch.JournalItem, len(entries))
	for i, e := range entries {
		rec, err := branch.DecodeJournal(e.Data)
		require.NoError(t, err)
		items[i] = branch.JournalItem{ID: e.ID, Record: rec}
	}
	b := &owning{t: t, token: "replica-b", core: handoverCore(), journal: journal}
	index, _ := branch.RestoreJournal(b.core, items)
	b.index = *index
	require.Equal(t, held(t, a.core), held(t, b.core), "the new owner holds what the dead one held")

	// A late write of the old owner changes nothing: neither the journal
	// nor the cursor the new owner resumes from.
	err = a.step(6*time.Second, branch.WriteEvent{Target: handoverTarget, Author: alice, Write: configMap("late", "1")})
	require.ErrorIs(t, err, redisstore.ErrNotOwner)
	after, err := journal.Read(ctx, mainBranch)
	require.NoError(t, err)
	require.Equal(t, entries, after)
	cursor, err := (&redisstore.Cursors{Client: client, Prefix: "blue:"}).Load(ctx, "uid:/v1/configmaps:team")
	require.NoError(t, err)
	require.Equal(t, "f 5 h", cursor, "the cursor of the last write the old owner journaled")

	// The new owner's commit of bob's window settles its entry.
	b.rv = a.rv
	require.NoError(t, b.step(7*time.Second, branch.CommittedEvent{Windows: []branch.WindowResult{{Seq: 1, Committed: true, Commit: "c1"}}}))
	entries, err = journal.Read(ctx, mainBranch)
	require.NoError(t, err)
	require.Len(t, entries, 2, "alice's two later writes wait for their commit")
}
