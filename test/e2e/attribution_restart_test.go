package e2e

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/operator"
	"github.com/configbutler/gitops-reverser/internal/redisconn"
	"github.com/configbutler/gitops-reverser/test/harness"
)

// withRedis is a startOperatorWith tune: resume cursors in redis, and,
// with attribution, the default fact transport there too.
func withRedis(r *harness.Redis) func(*operator.Options) {
	return func(o *operator.Options) { o.Redis = &redisconn.Options{Addr: r.Addr()} }
}

// startRedis is a redis-server for one test and a client of it.
func startRedis(t *testing.T) (*harness.Redis, *goredis.Client) {
	t.Helper()
	redis, err := harness.StartRedis(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(redis.Stop)
	rdb := goredis.NewClient(&goredis.Options{Addr: redis.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	return redis, rdb
}

// attributingWithRedis is a startOperatorWith tune: attribution with the
// given grace, its facts and the resume cursors in redis.
func attributingWithRedis(r *harness.Redis, grace time.Duration) func(*operator.Options) {
	return func(o *operator.Options) {
		withAttribution(grace)(o)
		o.Attribution.Transport = "" // the default: redis, since Redis is configured
		withRedis(r)(o)
	}
}

// TestAFactPublishedBeforeARestartNamesTheAuthorOfAChangeCommittedAfterIt:
// alice's change reaches the first operator, which publishes her fact to
// Redis but cannot push (the repository is away), so it stops with the
// change unwritten and its resume cursor before it. The second operator
// resumes from that cursor, sees the change live and finds the author in
// the facts the first one published: the commit is alice's.
func TestAFactPublishedBeforeARestartNamesTheAuthorOfAChangeCommittedAfterIt(t *testing.T) {
	redis, rdb := startRedis(t)
	tune := attributingWithRedis(redis, 10*time.Second)

	m := newMirror(t, "attr-restart", "configmaps")
	stopFirst := startOperatorWith(t, tune)
	waitReady(t, m.ns, m.target)
	file := m.path + "/attr-restart/configmaps/shared.yaml"
	apply(t, configMap(m.ns, "shared", map[string]string{"v": "1"}))
	eventually(t, "the create in Git", func() bool { return containsLine(gitFile(t, m.repo, file), `  v: "1"`) })
	waitForStoredCursor(t, rdb, m, resourceVersion(t, m.ns, "shared"))

	repo := env.git.RepoPath(m.repo)
	require.NoError(t, os.Rename(repo, repo+".away"))
	alice := actor(t, "alice", map[string][]string{
		"configbutler.ai/claims/display-name": {"Alice Liddell"}, "configbutler.ai/claims/email": {"alice@example.com"}})
	var cm corev1.ConfigMap
	require.NoError(t, alice.Get(context.Background(), client.ObjectKey{Namespace: m.ns, Name: "shared"}, &cm))
	cm.Data["v"] = "2"
	require.NoError(t, alice.Update(context.Background(), &cm))
	eventually(t, "alice's fact in Redis", func() bool {
		entries, err := rdb.XRange(context.Background(), redisconn.DefaultKeyPrefix+"facts:default:/configmaps", "-", "+").Result()
		if err != nil {
			return false
		}
		for _, e := range entries {
			if f, _ := e.Values["f"].(string); strings.Contains(f, `"alice"`) && strings.Contains(f, cm.ResourceVersion) {
				return true
			}
		}
		return false
	})
	stopFirst()
	require.NoError(t, os.Rename(repo+".away", repo))
	require.True(t, containsLine(gitFile(t, m.repo, file), `  v: "1"`), "the first operator did not write the change")

	startOperatorWith(t, tune)
	eventually(t, "the change in Git", func() bool { return containsLine(gitFile(t, m.repo, file), `  v: "2"`) })
	// A replay's writes are the committer's: alice as the author says the
	// change came as a live event of the resumed watch.
	require.Equal(t, "Alice Liddell <alice@example.com>", authorOf(t, m, file))
	// Other tests' GitTargets in the cluster resume too (the metric has no
	// target label), so this one is at least one of them.
	require.GreaterOrEqual(t, metricSumWhere(t, "gitopsreverser_watch_resumes_total", map[string]string{"resource": "configmaps"}), 1.0,
		"the configmaps stream resumed from its cursor")
}

func resourceVersion(t *testing.T, ns, name string) string {
	t.Helper()
	var cm corev1.ConfigMap
	require.NoError(t, env.kube.Client().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &cm))
	return cm.ResourceVersion
}

// waitForStoredCursor waits until the configmaps stream of m's target has
// a cursor at rv or later in Redis.
func waitForStoredCursor(t *testing.T, rdb *goredis.Client, m mirrorSetup, rv string) {
	t.Helper()
	var target v1alpha3.GitTarget
	require.NoError(t, env.kube.Client().Get(context.Background(), client.ObjectKey{Namespace: m.ns, Name: m.target}, &target))
	key := redisconn.DefaultKeyPrefix + "cursor:" + string(target.UID) + ":/v1/configmaps:" + m.ns
	want, err := strconv.ParseInt(rv, 10, 64)
	require.NoError(t, err)
	eventually(t, "the resume cursor stored", func() bool {
		value, err := rdb.Get(context.Background(), key).Result()
		if err != nil {
			return false
		}
		// "<fingerprint> <resourceVersion> <branch head>"; older cursors
		// had no head
		fields := strings.Fields(value)
		if len(fields) < 2 {
			return false
		}
		got, err := strconv.ParseInt(fields[1], 10, 64)
		return err == nil && got >= want
	})
}
