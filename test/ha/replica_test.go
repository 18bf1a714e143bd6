package ha

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/configbutler/gitops-reverser/test/harness"
)

// operatorLogEnv set to "debug" makes the operators log at debug level
// (their logs are files in the suite's directory; GITOPS_REVERSER_HA_KEEP
// keeps them).
const operatorLogEnv = "HA_OPERATOR_LOG"

// replica is one operator process of a cluster of three.
type replica struct {
	identity   string
	cmd        *exec.Cmd
	logPath    string
	metricsURL string
	done       chan struct{}
	// waitErr is how the process ended; crashed, whether it ended before
	// the test stopped it. Both are set before done closes.
	waitErr error
	crashed bool
	// stopped is set once the test kills or terminates the process.
	stopped atomic.Bool
}

// cluster is the operator replicas of one test, all with the same Redis key
// prefix and --replica-count.
type cluster struct {
	// name labels the logs and is the operator namespace (its Leases);
	// prefix is the Redis key prefix.
	name, prefix string
	count        int
	// t is the test the cluster belongs to: a replica started in one of
	// its steps runs until that test ends.
	t testing.TB

	mu       sync.Mutex
	replicas map[string]*replica // running or stopped, by identity
	// started is every process the cluster started, in order, restarts
	// included: each one's log is read for panics at the end.
	started []*replica
	// proxies stand between each identity and redis-server, kept across
	// its restarts, so a step can cut any replica off from Redis.
	proxies map[string]*redisProxy
	// args, when set, are further flags for identity's process; a flag
	// given again there wins over the one above it.
	args func(identity string) []string
}

// newCluster creates the operator namespace; no replica runs yet.
func newCluster(t testing.TB, name, prefix string, count int) *cluster {
	t.Helper()
	create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	c := &cluster{name: name, prefix: prefix, count: count, t: t, replicas: map[string]*replica{},
		proxies: map[string]*redisProxy{}}
	// Registered before any replica's kill, so it runs after them all,
	// with every log complete.
	t.Cleanup(func() {
		if fault := c.fault(true); fault != "" {
			t.Error(fault)
		}
	})
	return c
}

// start runs the operator as replica identity; the cluster's test kills it
// at its end if it still runs. A replica started again under the same name (a pod
// restarted) gets a log of its own.
func (c *cluster) start(t testing.TB, identity string) *replica {
	t.Helper()
	port, err := harness.FreePort()
	require.NoError(t, err)
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", port)
	c.mu.Lock()
	logPath := filepath.Join(env.dir, fmt.Sprintf("%s-%s-%d.log", c.name, identity, len(c.started)+1))
	proxy := c.proxies[identity]
	if proxy == nil {
		proxy = startRedisProxy(c.t, env.redis.Addr())
		c.proxies[identity] = proxy
	}
	c.mu.Unlock()
	args := []string{
		"--kubeconfig=" + env.kubeconfig,
		"--leader-elect=true",
		"--operator-namespace=" + c.name,
		// Configured-author mode: attribution needs the audit webhook, which
		// this suite does not prove.
		"--author-attribution=false",
		"--metrics-bind-address=" + metricsAddr,
		"--health-probe-bind-address=0",
		"--redis-addr=" + proxy.Addr(),
		"--redis-key-prefix=" + c.prefix,
		"--replica-count=" + strconv.Itoa(c.count),
		"--replica-identity=" + identity,
		// A healthy GitTarget is looked at again within the test's patience.
		"--target-resync-interval=5s",
	}
	if c.args != nil {
		args = append(args, c.args(identity)...)
	}
	if os.Getenv(operatorLogEnv) == "debug" {
		// Millisecond timestamps: a failover's steps are read off them.
		args = append(args, "--zap-log-level=debug", "--zap-time-encoding=rfc3339nano")
	}
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	cmd := exec.Command(env.binary, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// A dying test must not leave an operator writing to the remote.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(t, cmd.Start(), "starting replica %s", identity)
	r := &replica{identity: identity, cmd: cmd, logPath: logPath, metricsURL: "http://" + metricsAddr + "/metrics",
		done: make(chan struct{})}
	go func() {
		r.waitErr = cmd.Wait()
		r.crashed = !r.stopped.Load()
		logFile.Close()
		close(r.done)
	}()
	c.mu.Lock()
	c.replicas[identity] = r
	c.started = append(c.started, r)
	c.mu.Unlock()
	c.t.Cleanup(func() { r.kill() })
	return r
}

// get is the latest process of identity.
func (c *cluster) get(identity string) *replica {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.replicas[identity]
}

// proxy is the proxy between identity and redis-server.
func (c *cluster) proxy(identity string) *redisProxy {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.proxies[identity]
}

// running are the replicas whose process has not ended and that can reach
// Redis (one cut off from it is out of the group until it can again).
func (c *cluster) running() []*replica {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*replica
	for id, r := range c.replicas {
		if !r.exited() && !c.proxies[id].IsCut() {
			out = append(out, r)
		}
	}
	return out
}

// logs names every replica's log, for failure messages.
func (c *cluster) logs() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var paths []string
	for _, r := range c.replicas {
		paths = append(paths, r.logPath)
	}
	return "operator logs: " + strings.Join(paths, ", ")
}

func (r *replica) exited() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// kill ends the process at once (SIGKILL), as a crashed node would, and
// waits for it.
func (r *replica) kill() {
	r.stopped.Store(true)
	if !r.exited() {
		_ = r.cmd.Process.Kill()
	}
	<-r.done
}

// terminate sends SIGTERM, as Kubernetes does to a pod it stops, and
// returns without waiting: the caller waits on done.
func (r *replica) terminate(t testing.TB) {
	t.Helper()
	r.stopped.Store(true)
	require.NoError(t, r.cmd.Process.Signal(syscall.SIGTERM), "SIGTERM to replica %s", r.identity)
}

// metric is the sum of every series of the gauge or counter name, read
// from the replica's metrics endpoint.
func (r *replica) metric(ctx context.Context, name string) (float64, error) {
	return r.scrape(ctx, func(scanner *bufio.Scanner) (float64, error) { return sumSeries(scanner, name) })
}

// series is the value of one labelled series, as the text format writes
// it (`name{label="value"}`), or 0 while a counter has none yet.
func (r *replica) series(ctx context.Context, series string) (float64, error) {
	return r.scrape(ctx, func(scanner *bufio.Scanner) (float64, error) {
		for scanner.Scan() {
			if value, ok := strings.CutPrefix(scanner.Text(), series+" "); ok {
				v, err := strconv.ParseFloat(value, 64)
				if err != nil {
					return 0, fmt.Errorf("parsing %s: %w", series, err)
				}
				return v, nil
			}
		}
		if err := scanner.Err(); err != nil {
			return 0, fmt.Errorf("reading the metrics: %w", err)
		}
		return 0, nil
	})
}

// scrape reads the replica's metrics endpoint with read.
func (r *replica) scrape(ctx context.Context, read func(*bufio.Scanner) (float64, error)) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.metricsURL, nil)
	if err != nil {
		return 0, fmt.Errorf("building the metrics request: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("scraping replica %s: %w", r.identity, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("scraping replica %s: %s", r.identity, resp.Status)
	}
	return read(bufio.NewScanner(resp.Body))
}

// sumSeries adds the values of every sample of name in the Prometheus text
// format as client_golang writes it (no timestamps).
func sumSeries(scanner *bufio.Scanner, name string) (float64, error) {
	var sum float64
	found := false
	for scanner.Scan() {
		line := scanner.Text()
		if !strings.HasPrefix(line, name+" ") && !strings.HasPrefix(line, name+"{") {
			continue
		}
		value, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			return 0, fmt.Errorf("parsing metric line %q: %w", line, err)
		}
		sum += value
		found = true
	}
	if err := scanner.Err(); err != nil {
		return 0, fmt.Errorf("reading the metrics: %w", err)
	}
	if !found {
		return 0, fmt.Errorf("no series of %s", name)
	}
	return sum, nil
}
