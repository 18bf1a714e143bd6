package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/configbutler/gitops-reverser/internal/operator"
	"github.com/configbutler/gitops-reverser/internal/redisconn"
	"github.com/configbutler/gitops-reverser/test/harness"
)

// The operator's two log lines of a Redis outage.
const (
	redisDownLine = "Redis does not answer"
	redisUpLine   = "Redis answers again"
)

// TestAnEditDuringARedisOutageKeepsItsAuthorAndThePodStaysReady: with the
// Redis fact transport, Redis stops. The API server's audit batch still
// reaches the ingress, which files alice's fact into the operator's own
// index, so her edit is committed as hers; /readyz stays 200 (the audit
// ingress stays in its Service); the outage is logged once. When Redis
// is back (empty), the fact held meanwhile is published there.
func TestAnEditDuringARedisOutageKeepsItsAuthorAndThePodStaysReady(t *testing.T) {
	redis, rdb := startRedis(t)
	port, err := harness.FreePort()
	require.NoError(t, err)
	probes := fmt.Sprintf("http://127.0.0.1:%d", port)
	downBefore, upBefore := strings.Count(operatorLog.String(), redisDownLine), strings.Count(operatorLog.String(), redisUpLine)

	m := newMirror(t, "attr-redis-outage", "configmaps")
	startOperatorWith(t, func(o *operator.Options) {
		attributingWithRedis(redis, 10*time.Second)(o)
		o.ProbeAddr = fmt.Sprintf("127.0.0.1:%d", port)
	})
	waitReady(t, m.ns, m.target)
	ctx := context.Background()
	alice := actor(t, "alice", nil)
	file := m.path + "/attr-redis-outage/configmaps/shared.yaml"
	require.NoError(t, alice.Create(ctx, configMap(m.ns, "shared", map[string]string{"v": "1"})))
	eventually(t, "the create in Git", func() bool { return containsLine(gitFile(t, m.repo, file), `  v: "1"`) })
	require.Equal(t, gitAuthor("alice"), authorOf(t, m, file), "through Redis")

	redis.Stop()
	var cm corev1.ConfigMap
	require.NoError(t, alice.Get(ctx, client.ObjectKey{Namespace: m.ns, Name: "shared"}, &cm))
	cm.Data["v"] = "2"
	require.NoError(t, alice.Update(ctx, &cm))
	eventually(t, "the edit in Git", func() bool { return containsLine(gitFile(t, m.repo, file), `  v: "2"`) })
	require.Equal(t, gitAuthor("alice"), authorOf(t, m, file), "the edit made while Redis was away is alice's")
	eventually(t, "the outage logged", func() bool { return strings.Count(operatorLog.String(), redisDownLine) > downBefore })
	code, body := probe(t, probes+"/readyz?verbose")
	require.Equal(t, http.StatusOK, code, "Redis gates no readiness:\n%s", body)
	require.Zero(t, metricSum(t, "gitopsreverser_redis_up"))

	require.NoError(t, redis.Restart())
	eventually(t, "alice's fact published to Redis once it is back", func() bool {
		return heldFactInRedis(rdb, cm.ResourceVersion)
	})
	eventually(t, "the end of the outage logged", func() bool { return strings.Count(operatorLog.String(), redisUpLine) > upBefore })
	require.Equal(t, downBefore+1, strings.Count(operatorLog.String(), redisDownLine), "one line for the outage")
	require.Equal(t, upBefore+1, strings.Count(operatorLog.String(), redisUpLine), "one line for its end")
	require.Equal(t, 1.0, metricSum(t, "gitopsreverser_redis_up"))
	code, body = probe(t, probes+"/readyz?verbose")
	require.Equal(t, http.StatusOK, code, body)
}

// heldFactInRedis: the configmaps fact stream holds alice's fact of rv.
func heldFactInRedis(rdb *goredis.Client, rv string) bool {
	entries, err := rdb.XRange(context.Background(), redisconn.DefaultKeyPrefix+"facts:default:/configmaps", "-", "+").Result()
	if err != nil {
		return false
	}
	for _, e := range entries {
		if f, _ := e.Values["f"].(string); strings.Contains(f, `"alice"`) && strings.Contains(f, `"rv":"`+rv+`"`) {
			return true
		}
	}
	return false
}

func probe(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}
