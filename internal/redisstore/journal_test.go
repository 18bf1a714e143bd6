package redisstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/configbutler/gitops-reverser/internal/redisstore"
)

const (
	mainBranch = "team/github@main"
	owner      = "replica-a"
)

// ownedJournal is a journal on a redis-server of the test's own, under
// prefix "blue:", whose branch mainBranch is claimed by owner.
func ownedJournal(t *testing.T) (*redisstore.Journal, *goredis.Client) {
	t.Helper()
	_, client := startRedis(t)
	claims := &redisstore.Claims{Client: client, Prefix: "blue:"}
	got, err := claims.Acquire(context.Background(), mainBranch, owner, time.Minute)
	require.NoError(t, err)
	require.True(t, got)
	return &redisstore.Journal{Client: client, Prefix: "blue:", CursorTTL: time.Minute}, client
}

func entries(n int, format string) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = fmt.Appendf(nil, format, i)
	}
	return out
}

// requireJournal reads the journal and compares what its entries hold.
func requireJournal(t *testing.T, journal *redisstore.Journal, want []string, why string) {
	t.Helper()
	got, err := journal.Read(context.Background(), mainBranch)
	require.NoError(t, err)
	data := make([]string, len(got))
	for i, e := range got {
		data[i] = string(e.Data)
	}
	require.Equal(t, want, data, why)
}

func TestJournalAppendStoresTheEntriesAndTheCursorsTheCursorStoreLoads(t *testing.T) {
	journal, client := ownedJournal(t)
	ctx := context.Background()

	ids, err := journal.Append(ctx, mainBranch, owner, entries(3, "write %d"), map[string]string{"uid:/v1/configmaps:team": "f 42 h"})
	require.NoError(t, err)
	require.Len(t, ids, 3)
	requireJournal(t, journal, []string{"write 0", "write 1", "write 2"}, "the entries in order")
	got, err := journal.Read(ctx, mainBranch)
	require.NoError(t, err)
	require.Equal(t, ids, []string{got[0].ID, got[1].ID, got[2].ID})

	cursors := &redisstore.Cursors{Client: client, Prefix: "blue:"}
	value, err := cursors.Load(ctx, "uid:/v1/configmaps:team")
	require.NoError(t, err)
	require.Equal(t, "f 42 h", value, "Cursors reads what the journal stored")
	ttl, err := client.PTTL(ctx, "blue:cursor:uid:/v1/configmaps:team").Result()
	require.NoError(t, err)
	require.Greater(t, ttl, 50*time.Second, "the cursor has the store's TTL")
}

func TestJournalAnAppendThatFailsLeavesNeitherEntriesNorCursors(t *testing.T) {
	journal, client := ownedJournal(t)
	ctx := context.Background()
	// The journal's key holds a string: XADD would fail there, after the
	// cursors could have been set had the script not checked first.
	require.NoError(t, client.Set(ctx, "blue:journal:"+mainBranch, "not a stream", 0).Err())

	_, err := journal.Append(ctx, mainBranch, owner, entries(2, "write %d"), map[string]string{"uid:/v1/configmaps:team": "f 42 h"})
	require.Error(t, err)
	require.NotErrorIs(t, err, redisstore.ErrNotOwner)
	n, err := client.Exists(ctx, "blue:cursor:uid:/v1/configmaps:team").Result()
	require.NoError(t, err)
	require.Zero(t, n, "no cursor without its writes")
	value, err := client.Get(ctx, "blue:journal:"+mainBranch).Result()
	require.NoError(t, err)
	require.Equal(t, "not a stream", value)
}

func TestJournalWritesOfANonOwnerAreRefusedAndChangeNothing(t *testing.T) {
	journal, client := ownedJournal(t)
	ctx := context.Background()
	ids, err := journal.Append(ctx, mainBranch, owner, entries(2, "write %d"), nil)
	require.NoError(t, err)

	_, err = journal.Append(ctx, mainBranch, "replica-b", entries(1, "late %d"), map[string]string{"uid:/v1/configmaps:team": "f 99 h"})
	require.ErrorIs(t, err, redisstore.ErrNotOwner)
	_, err = journal.Trim(ctx, mainBranch, "replica-b", ids[1])
	require.ErrorIs(t, err, redisstore.ErrNotOwner)
	require.ErrorIs(t, journal.DropSettled(ctx, mainBranch, "replica-b"), redisstore.ErrNotOwner)
	_, err = journal.Append(ctx, "team/github@unclaimed", owner, entries(1, "write %d"), nil)
	require.ErrorIs(t, err, redisstore.ErrNotOwner, "a branch nobody claims is nobody's to write")
	require.ErrorIs(t, err, redisstore.ErrClaimExpired, "and says nobody holds it")
	_, err = journal.Trim(ctx, mainBranch, "replica-b", ids[1])
	require.NotErrorIs(t, err, redisstore.ErrClaimExpired, "a claim another holds has not expired")

	requireJournal(t, journal, []string{"write 0", "write 1"}, "nothing of the refused writes")
	n, err := client.Exists(ctx, "blue:cursor:uid:/v1/configmaps:team", "blue:journal:team/github@unclaimed").Result()
	require.NoError(t, err)
	require.Zero(t, n)
}

func TestJournalTrimRemovesUpToACommittedEntryAndStrayCommittedOnes(t *testing.T) {
	journal, _ := ownedJournal(t)
	ctx := context.Background()
	ids, err := journal.Append(ctx, mainBranch, owner, entries(6, "write %d"), nil)
	require.NoError(t, err)

	removed, err := journal.Trim(ctx, mainBranch, owner, ids[1])
	require.NoError(t, err)
	require.EqualValues(t, 2, removed)
	requireJournal(t, journal, []string{"write 2", "write 3", "write 4", "write 5"}, "up to and including the entry")

	removed, err = journal.Trim(ctx, mainBranch, owner, ids[2], ids[4])
	require.NoError(t, err)
	require.EqualValues(t, 2, removed)
	requireJournal(t, journal, []string{"write 3", "write 5"}, "the stray IDs")

	_, err = journal.Trim(ctx, mainBranch, owner, ids[5])
	require.NoError(t, err)
	require.NoError(t, journal.DropSettled(ctx, mainBranch, owner))
	requireJournal(t, journal, []string{}, "dropped")
}

func TestJournalDropSettledKeepsAJournalThatStillHoldsWrites(t *testing.T) {
	journal, _ := ownedJournal(t)
	ctx := context.Background()
	ids, err := journal.Append(ctx, mainBranch, owner, entries(2, "write %d"), nil)
	require.NoError(t, err)

	require.ErrorIs(t, journal.DropSettled(ctx, mainBranch, owner), redisstore.ErrJournalUnsettled)
	requireJournal(t, journal, []string{"write 0", "write 1"}, "kept: its writes are not in Git")
	require.ErrorIs(t, journal.DropSettled(ctx, mainBranch, "replica-b"), redisstore.ErrNotOwner)

	_, err = journal.Trim(ctx, mainBranch, owner, ids[1])
	require.NoError(t, err)
	require.NoError(t, journal.DropSettled(ctx, mainBranch, owner))
	n, err := journal.Stats(ctx, mainBranch)
	require.NoError(t, err)
	require.Zero(t, n.Depth)
}

func TestJournalReadKeepsTheOrderAcrossPagesAndBatches(t *testing.T) {
	journal, _ := ownedJournal(t)
	ctx := context.Background()
	journal.Page, journal.Batch = 7, 10
	want := entries(45, "write %02d")
	ids, err := journal.Append(ctx, mainBranch, owner, want, map[string]string{"uid:/v1/configmaps:team": "f 42 h"})
	require.NoError(t, err)
	require.Len(t, ids, 45, "five scripts of at most ten")
	more, err := journal.Append(ctx, mainBranch, owner, entries(3, "more %d"), nil)
	require.NoError(t, err)

	got, err := journal.Read(ctx, mainBranch)
	require.NoError(t, err)
	require.Len(t, got, 48)
	for i, w := range want {
		require.Equal(t, string(w), string(got[i].Data))
		require.Equal(t, ids[i], got[i].ID)
	}
	require.Equal(t, more, []string{got[45].ID, got[46].ID, got[47].ID})

	empty, err := journal.Read(ctx, "team/github@none")
	require.NoError(t, err)
	require.Empty(t, empty)
}

func TestJournalStatsTellDepthAndTheOldestEntrysAge(t *testing.T) {
	journal, _ := ownedJournal(t)
	ctx := context.Background()
	stats, err := journal.Stats(ctx, mainBranch)
	require.NoError(t, err)
	require.Equal(t, redisstore.JournalStats{}, stats)

	ids, err := journal.Append(ctx, mainBranch, owner, entries(4, "write %d"), nil)
	require.NoError(t, err)
	var ms int64
	_, err = fmt.Sscanf(ids[0], "%d-", &ms)
	require.NoError(t, err)
	journal.Clock = clocktesting.NewFakePassiveClock(time.UnixMilli(ms).Add(90 * time.Second))
	stats, err = journal.Stats(ctx, mainBranch)
	require.NoError(t, err)
	require.Equal(t, redisstore.JournalStats{Depth: 4, Age: 90 * time.Second}, stats)
}
