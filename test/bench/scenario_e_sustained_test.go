package bench

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ghsim "github.com/configbutler/gitops-reverser/test/sim/github"
)

const (
	sustainedRate     = 10 // changes a second
	sustainedDuration = 60 * time.Second
	// sustainedObjects ConfigMaps are changed once each, so every change
	// must still be visible in the repository at the end.
	sustainedObjects = sustainedRate * 60
	// GitHub's documented secondary limit on content-creating requests.
	githubContentPerMinute = 80
	githubContentPerHour   = 500
	// sustainedWindowEnv adds a run with this commitWindow (e.g. 100ms) next
	// to the default one; it observes for sustainedObserve after the stream
	// and reports what is still missing instead of failing.
	sustainedWindowEnv = "GITOPS_REVERSER_BENCH_SUSTAINED_WINDOW"
	sustainedObserve   = 2 * time.Minute
)

// BenchmarkSustainedChanges is scenario E, on GitHub only: the simulator
// enforces the documented secondary limit (80 content-creating requests a
// minute, 500 an hour), and 600 mirrored ConfigMaps are changed once each,
// 10 a second for 60 s, through the operator with the default commit
// window. Figures: commits, the operator's requests (and the most
// content-creating ones in any minute), every 403/429 the simulator
// answered (none may: no secondary-limit failure), and every change in the
// repository at the end (none lost).
func BenchmarkSustainedChanges(b *testing.B) {
	b.Run("github", func(b *testing.B) { sustainedChanges(b, 0, 3*time.Minute, true) })
	if raw := os.Getenv(sustainedWindowEnv); raw != "" {
		window, err := time.ParseDuration(raw)
		require.NoError(b, err, "parsing %s", sustainedWindowEnv)
		b.Run("github-window-"+raw, func(b *testing.B) { sustainedChanges(b, window, sustainedObserve, false) })
	}
}

// sustainedChanges runs the stream with commitWindow window (0: the
// default) and waits up to observe for every change in Git, which must
// happen when mustLand.
func sustainedChanges(b *testing.B, window, observe time.Duration, mustLand bool) {
	e := sharedEnv(b)
	ctx := context.Background()
	r := newReporter(b, "E 10 changes/s for 60 s", forgeGitHub)
	if window > 0 {
		r.scenario += ", window " + window.String()
	}
	name := uniqueName("sustained")
	m, err := newMirror(ctx, e, name, mirrorOptions{forge: forgeGitHub, commitWindow: window,
		simOptions: []ghsim.Option{ghsim.WithContentLimit(githubContentPerMinute, githubContentPerHour)}})
	require.NoError(b, err)
	b.Cleanup(func() { require.NoError(b, m.retire(ctx, e)) })
	require.NoError(b, createConfigMaps(ctx, e.client(), name, sustainedObjects))
	op, err := startOperator(e, name)
	require.NoError(b, err)
	defer stopOperator(b, op)
	_, err = pollHeads(ctx, m.remote, op, 200*time.Millisecond, 2*time.Minute, func(ctx context.Context, head string) (bool, error) {
		files, err := m.remote.files(ctx, head)
		n := 0
		for _, file := range files {
			if strings.HasPrefix(file, name+"/configmaps/") {
				n++ // the target's path holds a README.md too
			}
		}
		return n == sustainedObjects, err
	})
	require.NoError(b, err, "waiting for the %d ConfigMaps in Git", sustainedObjects)
	require.NoError(b, waitReady(ctx, e, m, op, time.Minute))
	commitsBefore, err := m.remote.commitCount(ctx)
	require.NoError(b, err)
	before, err := markRequests(ctx, e, op, m, requestMark{}, commitsBefore)
	require.NoError(b, err)

	res := streamChanges(b, e, m, op, observe)
	commitsAfter, err := m.remote.commitCount(ctx)
	require.NoError(b, err)
	after, err := markRequests(ctx, e, op, m, before, commitsAfter-commitsBefore)
	require.NoError(b, err)
	u, err := op.usage()
	require.NoError(b, err)
	if mustLand {
		require.NoError(b, res.waitErr, "waiting for every change in Git")
	}
	reportSustained(r, m, res, before, after, commitsAfter-commitsBefore, mustLand)
	r.usage(u)
}

// streamResult is what the stream of changes and the wait after it saw.
type streamResult struct {
	start     time.Time
	streamed  time.Duration
	landed    int
	allInGit  time.Time
	waitErr   error
	newHeads  []time.Time
	patchErrs int
}

// streamChanges changes ConfigMap i at start + i/sustainedRate seconds,
// then waits up to observe for all of them in Git, watching main's head
// meanwhile through the simulator's helper (no request).
func streamChanges(b *testing.B, e *benchEnv, m *mirror, op *operatorRun, observe time.Duration) streamResult {
	ctx := context.Background()
	stopWatching := watchHeads(m.repo.github)
	res := streamResult{start: time.Now()}
	marker := "sustained-marker-" + m.name
	for i := range sustainedObjects {
		time.Sleep(time.Until(res.start.Add(time.Duration(i) * time.Second / sustainedRate)))
		key := client.ObjectKey{Namespace: m.name, Name: fmt.Sprintf("cm-%04d", i)}
		if err := patchValue(ctx, e.client(), key, fmt.Sprintf("%s-%04d", marker, i)); err != nil {
			b.Errorf("change %d: %v", i, err)
			res.patchErrs++
		}
	}
	res.streamed = time.Since(res.start)
	res.allInGit, res.waitErr = pollHeads(ctx, m.remote, op, 500*time.Millisecond, observe,
		func(ctx context.Context, head string) (bool, error) {
			n, err := m.remote.filesContaining(ctx, head, marker)
			res.landed = n
			return n == sustainedObjects, err
		})
	res.newHeads = stopWatching()
	return res
}

// watchHeads records when main's head changes on the simulator, every
// 100 ms, until the returned stop is called.
func watchHeads(g *githubRepo) (stop func() []time.Time) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	var seen []time.Time
	wg.Add(1)
	go func() {
		defer wg.Done()
		last := ""
		if c, err := g.sim.HeadCommit(g.owner, g.name, "main"); err == nil {
			last = c.SHA
		}
		for {
			select {
			case <-done:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if c, err := g.sim.HeadCommit(g.owner, g.name, "main"); err == nil && c.SHA != last {
				last = c.SHA
				seen = append(seen, time.Now())
			}
		}
	}()
	return func() []time.Time {
		close(done)
		wg.Wait()
		return seen
	}
}

// reportSustained records the scenario's figures; with mustLand, a change
// not in Git at the end is a lost write, otherwise a backlog.
func reportSustained(r reporter, m *mirror, res streamResult, before, after requestMark, commits int, mustLand bool) {
	r.b.Helper()
	r.info("changes", float64(sustainedObjects-res.patchErrs), "")
	r.info("changes per second (achieved)", float64(sustainedObjects-res.patchErrs)/res.streamed.Seconds(), "")
	r.info("commits", float64(commits), "")
	if len(res.newHeads) > 0 {
		r.info("first change to first commit", seconds(res.newHeads[0].Sub(res.start)), "s")
	}
	if res.waitErr == nil {
		r.info("last change to all in Git", seconds(res.allInGit.Sub(res.start.Add(res.streamed))), "s")
	}
	if mustLand {
		r.atMost("changes not in Git at the end (lost)", float64(sustainedObjects-res.landed), "", 0)
	} else {
		r.info(fmt.Sprintf("changes not yet in Git %s after the stream", sustainedObserve), float64(sustainedObjects-res.landed), "")
	}
	reportRequests(r, m, "", before, after, commits, 0)
	content := contentRequests(m.repo.github.operatorRequests(before.simLog, after.simLog))
	r.info("content-creating requests admitted", float64(len(content)), "")
	r.atMost("content-creating admitted in any minute", float64(mostWithin(content, time.Minute)), "", githubContentPerMinute)
	for i, at := range res.newHeads {
		r.b.Logf("commit %d on main at +%.1f s", i+1, at.Sub(res.start).Seconds())
	}
}

// contentRequests are the times of the admitted requests GitHub's
// secondary limit counts: POST, PATCH, PUT and DELETE not refused with a
// 403 or 429.
func contentRequests(reqs []ghsim.Request) []time.Time {
	var out []time.Time
	for _, req := range reqs {
		if req.Status == http.StatusForbidden || req.Status == http.StatusTooManyRequests {
			continue
		}
		switch req.Method {
		case "POST", "PATCH", "PUT", "DELETE":
			out = append(out, req.At)
		}
	}
	return out
}

// mostWithin is the most events (sorted by time) inside any window.
func mostWithin(events []time.Time, window time.Duration) int {
	most, first := 0, 0
	for last := range events {
		for events[last].Sub(events[first]) >= window {
			first++
		}
		most = max(most, last-first+1)
	}
	return most
}

// createConfigMaps makes n ConfigMaps cm-0000… in namespace.
func createConfigMaps(ctx context.Context, c client.Client, namespace string, n int) error {
	return inParallel(ctx, n, apiWorkers, func(ctx context.Context, i int) error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("cm-%04d", i)},
			Data: map[string]string{"key-0": "initial"}}
		if err := c.Create(ctx, cm); err != nil {
			return fmt.Errorf("creating ConfigMap %s/%s: %w", namespace, cm.Name, err)
		}
		return nil
	})
}
