package mirror

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"

	"github.com/configbutler/gitops-reverser/forges/gogit"
	"github.com/configbutler/gitops-reverser/internal/branch"
	"github.com/configbutler/gitops-reverser/internal/manifest"
	"github.com/configbutler/gitops-reverser/internal/redisstore"
	"github.com/configbutler/gitops-reverser/internal/rules"
	"github.com/configbutler/gitops-reverser/test/harness"
)

// TestAJournaledWorkerStoresTheCursorsWithItsJournal: a target whose
// worker journals stores its cursors in the worker's journal, after the
// writes handed before them and before those are in Git; a later start
// resumes from them.
func TestAJournaledWorkerStoresTheCursorsWithItsJournal(t *testing.T) {
	dir := t.TempDir()
	gitServer, err := harness.StartGitServer(dir, harness.GitServerOptions{})
	require.NoError(t, err)
	t.Cleanup(gitServer.Stop)
	_, err = gitServer.CreateBareRepo("journaled")
	require.NoError(t, err)
	redis, err := harness.StartRedis(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(redis.Stop)
	client := goredis.NewClient(&goredis.Options{Addr: redis.Addr()})
	t.Cleanup(func() { _ = client.Close() })

	key := branch.Key{ProviderNamespace: "team", Provider: "journaled", Branch: "main"}
	claims := &redisstore.Claims{Client: client, Prefix: "t:"}
	got, err := claims.Acquire(context.Background(), key.String(), "replica-a", time.Minute)
	require.NoError(t, err)
	require.True(t, got)
	journal := &redisstore.Journal{Client: client, Prefix: "t:"}
	sealer, err := branch.NewAEADSealer(make([]byte, 32))
	require.NoError(t, err)
	forge, err := gogit.New(gogit.Options{URL: gitServer.FileURL("journaled")})
	require.NoError(t, err)
	worker := branch.New(branch.Config{Key: key, Forge: forge, CommitWindow: time.Hour, Log: testr.New(t),
		Journal: journal, ClaimToken: "replica-a", JournalSealer: sealer})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = worker.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	target := branch.TargetKey{Namespace: "team", Name: "mirror"}
	require.NoError(t, worker.SetTarget(ctx, branch.Target{Key: target, Path: "mirror"}))

	store := &redisstore.Cursors{Client: client, Prefix: "t:"}
	cfg := Cursors{Store: store, Target: "uid", Config: "cfg", Resume: true}
	keeper := newCursorKeeper(cfg, target, worker, clock.RealClock{}, testr.New(t))
	claim := rules.Claim{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Namespace: "team", Kind: "ConfigMap"}
	cursor := keeper.cursor(claim, true)
	for i := range 10 {
		id := manifest.ObjectID{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "team", Name: fmt.Sprint("cm-", i)}
		require.NoError(t, worker.Write(ctx, target, branch.Author{}, branch.Write{ID: id,
			YAML: fmt.Appendf(nil, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d\n  namespace: team\n", i)}))
		cursor.Advance(fmt.Sprint(100 + i))
	}
	keeper.flush(ctx)

	entries, err := journal.Read(ctx, key.String())
	require.NoError(t, err)
	require.Len(t, entries, 10, "the writes the cursor passes are journaled, not yet committed")
	stored, err := store.Load(ctx, keeper.key(claim))
	require.NoError(t, err)
	require.Equal(t, keeper.claimFingerprint(claim)+" 109 none", stored, "no commit yet: the head is none")

	resumed := newCursorKeeper(cfg, target, worker, clock.RealClock{}, testr.New(t))
	rv, err := resumed.cursor(claim, true).Load(ctx)
	require.NoError(t, err)
	require.Equal(t, "109", rv)
}
