package operator

import (
	"context"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/redisconn"
	"github.com/configbutler/gitops-reverser/test/harness"
)

// cursorEnv is a control plane, a Git server and a Redis that outlive the
// operator runs of one test, as a cluster outlives its operator's pods.
type cursorEnv struct {
	kube  *harness.Kube
	git   *harness.GitServer
	redis *harness.Redis
	rdb   *goredis.Client
}

func newCursorEnv(t *testing.T) *cursorEnv {
	t.Helper()
	kube, git := startMirrorEnv(t)
	redis, err := harness.StartRedis(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(redis.Stop)
	rdb := goredis.NewClient(&goredis.Options{Addr: redis.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	return &cursorEnv{kube: kube, git: git, redis: redis, rdb: rdb}
}

// runningOperator is one operator process of the test.
type runningOperator struct {
	*operatorRun
	reg    *prometheus.Registry
	probes string
	stop   func()
}

// start runs the operator with Redis until the returned run is stopped.
func (e *cursorEnv) start(t *testing.T) *runningOperator {
	t.Helper()
	port, err := harness.FreePort()
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	run := &runningOperator{operatorRun: &operatorRun{exited: make(chan struct{})}, reg: prometheus.NewRegistry(),
		probes: "http://127.0.0.1:" + strconv.Itoa(port)}
	go func() {
		defer close(run.exited)
		run.err = Run(ctx, Options{
			Config: e.kube.Config(), MetricsAddr: "0", ProbeAddr: "127.0.0.1:" + strconv.Itoa(port),
			OperatorNamespace: "default", Registry: run.reg, SkipNameValidation: true, LeaderElect: false,
			Redis: &redisconn.Options{Addr: e.redis.Addr()},
		})
	}()
	stopped := false
	run.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		<-run.exited
		require.NoError(t, run.err)
	}
	t.Cleanup(run.stop)
	return run
}

func (e *cursorEnv) createConfigMap(t *testing.T, name string) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name}, Data: map[string]string{"k": name}}
	require.NoError(t, e.kube.Client().Create(context.Background(), cm))
	return cm
}

const configMapsDir = "clusters/dev/team-a/configmaps"

// inGit reports whether the ConfigMap's file is on main.
func (e *cursorEnv) inGit(name string) bool {
	_, err := e.git.Git("mirror", "cat-file", "-e", "main:"+configMapsDir+"/"+name+".yaml")
	return err == nil
}

func (e *cursorEnv) commitCount(t *testing.T) int {
	t.Helper()
	out, err := e.git.Git("mirror", "rev-list", "--count", "main")
	require.NoError(t, err)
	n, err := strconv.Atoi(strings.TrimSpace(out))
	require.NoError(t, err)
	return n
}

// gitConfigMaps are the ConfigMap names Git holds; clusterConfigMaps those
// the cluster does.
func (e *cursorEnv) gitConfigMaps(t *testing.T) []string {
	t.Helper()
	out, err := e.git.Git("mirror", "ls-tree", "--name-only", "main", configMapsDir+"/")
	require.NoError(t, err)
	var names []string
	for _, line := range strings.Fields(out) {
		names = append(names, strings.TrimSuffix(strings.TrimPrefix(line, configMapsDir+"/"), ".yaml"))
	}
	sort.Strings(names)
	return names
}

func (e *cursorEnv) clusterConfigMaps(t *testing.T) []string {
	t.Helper()
	var list corev1.ConfigMapList
	require.NoError(t, e.kube.Client().List(context.Background(), &list, client.InNamespace("team-a")))
	var names []string
	for _, cm := range list.Items {
		names = append(names, cm.Name)
	}
	sort.Strings(names)
	return names
}

// waitForCursorAt waits until the configmaps stream's stored cursor is
// at rv or later: what a restart would resume from.
func (e *cursorEnv) waitForCursorAt(t *testing.T, run *runningOperator, rv string) {
	t.Helper()
	want, err := strconv.ParseInt(rv, 10, 64)
	require.NoError(t, err)
	var target v1alpha3.GitTarget
	require.NoError(t, e.kube.Client().Get(context.Background(), client.ObjectKey{Namespace: "team-a", Name: "mirror"}, &target))
	key := redisconn.DefaultKeyPrefix + "cursor:" + string(target.UID) + ":/v1/configmaps:team-a"
	run.waitFor(t, "the cursor stored at "+rv, func() bool {
		value, err := e.rdb.Get(context.Background(), key).Result()
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

// counter reads a counter of the run's registry, summed over the series
// whose labels include every pair of match.
func (r *runningOperator) counter(t *testing.T, name string, match map[string]string) float64 {
	t.Helper()
	return counterIn(t, r.reg, name, match)
}

// counterIn reads a counter of g, summed over the series whose labels
// include every pair of match.
func counterIn(t *testing.T, g prometheus.Gatherer, name string, match map[string]string) float64 {
	t.Helper()
	families, err := g.Gather()
	require.NoError(t, err)
	total := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if labelsMatch(m, match) {
				total += m.GetCounter().GetValue()
			}
		}
	}
	return total
}

// gauge reads a gauge of the run's registry (-1 when it is missing).
func (r *runningOperator) gauge(t *testing.T, name string) float64 {
	t.Helper()
	families, err := r.reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return -1
}

func labelsMatch(m *dto.Metric, match map[string]string) bool {
	found := 0
	for _, l := range m.GetLabel() {
		if v, ok := match[l.GetName()]; ok && v == l.GetValue() {
			found++
		}
	}
	return found == len(match)
}

var configMapsLabels = map[string]string{"group": "", "resource": "configmaps"}

// TestResumeCursorsAcrossRestarts runs the operator four times over one
// cluster, Git server and Redis: a restart with a fresh cursor resumes
// without a replay or a commit; one whose cursor was compacted away
// replays, sweeps and leaves Git matching the cluster; Redis lost mid-run
// costs neither mirroring, nor readiness, nor, once it is back, the next
// resume.
func TestResumeCursorsAcrossRestarts(t *testing.T) {
	env := newCursorEnv(t)

	first := env.start(t)
	for _, name := range []string{"a", "b", "c"} {
		env.createConfigMap(t, name)
	}
	sentinel := env.createConfigMap(t, "sentinel-1")
	first.waitFor(t, "sentinel-1 in Git", func() bool { return env.inGit("sentinel-1") })
	env.waitForCursorAt(t, first, sentinel.ResourceVersion)
	require.Equal(t, 1.0, first.counter(t, "gitopsreverser_watch_cold_replays_total", map[string]string{"resource": "configmaps", "reason": "no_cursor"}))
	first.stop()

	t.Run("a fresh cursor resumes without a replay or a commit", func(t *testing.T) {
		commits := env.commitCount(t)
		run := env.start(t)
		run.waitFor(t, "readyz OK", func() bool { code, _ := get(run.probes + "/readyz"); return code == http.StatusOK })
		env.createConfigMap(t, "sentinel-2")
		run.waitFor(t, "sentinel-2 in Git", func() bool { return env.inGit("sentinel-2") })
		require.Equal(t, commits+1, env.commitCount(t), "only sentinel-2's commit: nothing replayed, nothing swept")
		require.Equal(t, 1.0, run.counter(t, "gitopsreverser_watch_resumes_total", configMapsLabels))
		require.Zero(t, run.counter(t, "gitopsreverser_watch_replays_total", configMapsLabels))
		run.stop()
	})

	t.Run("a cursor compacted away replays and sweeps", func(t *testing.T) {
		// Deleted while no operator runs; the compaction takes the DELETED
		// event with it, so only the replay's sweep can notice.
		require.NoError(t, env.kube.Client().Delete(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "b"}}))
		_, err := env.kube.CompactEtcd(context.Background())
		require.NoError(t, err)
		run := env.start(t)
		run.waitFor(t, "b swept from Git", func() bool { return !env.inGit("b") })
		require.Equal(t, env.clusterConfigMaps(t), env.gitConfigMaps(t), "Git matches the cluster")
		require.Equal(t, 1.0, run.counter(t, "gitopsreverser_watch_cold_replays_total", map[string]string{"resource": "configmaps", "reason": "expired"}))
		require.Equal(t, 1.0, run.counter(t, "gitopsreverser_watch_replays_total", configMapsLabels))

		t.Log("Redis stops mid-run: mirroring goes on, the pod stays ready")
		env.redis.Stop()
		env.createConfigMap(t, "during-outage")
		run.waitFor(t, "during-outage in Git", func() bool { return env.inGit("during-outage") })
		run.waitFor(t, "a cursor save failing", func() bool {
			return run.counter(t, "gitopsreverser_redis_errors_total", map[string]string{"operation": "save"}) > 0
		})
		run.waitFor(t, "redis_up at 0", func() bool { return run.gauge(t, "gitopsreverser_redis_up") == 0 })
		code, body := get(run.probes + "/readyz?verbose")
		require.Equal(t, http.StatusOK, code, "Redis gates no readiness:\n%s", body)
		require.NoError(t, env.redis.Restart())
		last := env.createConfigMap(t, "after-outage")
		run.waitFor(t, "after-outage in Git", func() bool { return env.inGit("after-outage") })
		env.waitForCursorAt(t, run, last.ResourceVersion)
		run.stop()
	})

	t.Run("once Redis is back the next restart resumes", func(t *testing.T) {
		commits := env.commitCount(t)
		run := env.start(t)
		env.createConfigMap(t, "sentinel-3")
		run.waitFor(t, "sentinel-3 in Git", func() bool { return env.inGit("sentinel-3") })
		require.Equal(t, commits+1, env.commitCount(t))
		require.Equal(t, 1.0, run.counter(t, "gitopsreverser_watch_resumes_total", configMapsLabels))
		require.Equal(t, env.clusterConfigMaps(t), env.gitConfigMaps(t))
	})
}
