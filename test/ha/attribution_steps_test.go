package ha

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func item(j int) string { return fmt.Sprintf("item-%d", j) }

// killWithAnOpenWindow: the owner of the first branch is cut off from Git
// (its GitProvider's URL goes through the gate), so every window it closes
// fails to commit and stays in its journal. The two actors take turns,
// runs of runLength changes to the same runLength ConfigMaps, 50 changes
// in all; each run is journaled, with its actor as the author, before the
// other actor starts (the sentinel that makes each run one window). The
// last run's window is still open (killWindow) when the owner is SIGKILLed.
// Once Git answers again, the new owner commits every journaled window:
// one commit per run, in order, authored by that run's actor, holding
// exactly the run's values, on top of the head the killed owner left.
func (a *attr) killWithAnOpenWindow(t *testing.T) {
	ctx := context.Background()
	m := a.s.branches[0]
	for j := range runLength {
		a.waitValue(t, m, item(j), "v0")
	}
	holders := waitSettled(t, a.c, a.s, a.members)
	owner := identityOf(holders[m.key])
	oldHead := a.s.head(t, m)
	a.gate.Cut()
	var want []string
	var lastRun time.Time // when the last run's writes were made
	for r := range runs {
		actor := a.actors[r%2]
		for j := range runLength {
			value := fmt.Sprintf("v%d", r*runLength+j+1)
			require.NoError(t, actor.write(ctx, m.ns, item(j), value))
			want = append(want, fmt.Sprintf("%s=%s by %s", item(j), value, actor.name))
		}
		lastRun = time.Now()
		a.waitJournaled(t, m, want)
	}
	killed := time.Now()
	a.c.get(owner).kill()
	a.gate.Restore()
	last := runs - 1
	for j := range runLength {
		a.waitValue(t, m, item(j), fmt.Sprintf("v%d", last*runLength+j+1))
	}
	// Not asserted (timing): the last window is open at the kill when the
	// kill came within its commit window of the last write.
	t.Logf("SIGKILL of %s %s after the last run's writes (commit window %s), with %d journaled changes in %d windows; "+
		"to the last window in Git: %s", owner, killed.Sub(lastRun).Round(100*time.Millisecond), killWindow, len(want), runs,
		time.Since(killed).Round(100*time.Millisecond))
	head := a.s.head(t, m)
	require.True(t, a.s.isAncestor(oldHead, head), "branch %s only moves forward: %s's head %s is an ancestor", m.branch, owner, oldHead)
	var paths []string
	for j := range runLength {
		paths = append(paths, file(m, item(j)))
	}
	out, err := env.git.Git(a.s.repo, append([]string{"log", "--reverse", "--format=%H %an", oldHead + ".." + head, "--"}, paths...)...)
	require.NoError(t, err)
	commits := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, commits, runs, "one commit per run (window):\n%s", out)
	for r, line := range commits {
		sha, author, _ := strings.Cut(line, " ")
		require.Equal(t, a.actors[r%2].name, author, "run %d's commit %s is authored by its actor", r, sha)
		for j := range runLength {
			require.Equal(t, fmt.Sprintf("v%d", r*runLength+j+1), a.valueAt(m, sha, item(j)), "%s at run %d's commit %s", item(j), r, sha)
		}
	}
	a.requireNoUnresolved(t, m, oldHead)
	waitSettled(t, a.c, a.s, without(a.members, owner))
	a.c.start(t, owner)
	waitSettled(t, a.c, a.s, a.members)
}

// waitJournaled waits until m's journal holds exactly want among its
// attributed writes (a replay's writes name no author and are left out).
// Within a run the order is the watch's, which resolves each object's
// changes on their own: only the runs' order is fixed.
func (a *attr) waitJournaled(t *testing.T, m mirrored, want []string) {
	t.Helper()
	var got []string
	require.Eventually(t, func() bool {
		var err error
		got, err = a.journaled(context.Background(), m)
		return err == nil && len(got) >= len(want)
	}, patience, 50*time.Millisecond, "%d journaled writes of %s; %s", len(want), m.branch, a.c.logs())
	require.Len(t, got, len(want), "the journal of %s holds every accepted change", m.branch)
	for r := 0; r < len(want); r += runLength {
		require.ElementsMatch(t, want[r:r+runLength], got[r:r+runLength],
			"the journal of %s holds run %d's changes, each with its actor", m.branch, r/runLength)
	}
}

// requireNoUnresolved: no commit on m's branch after since is authored by
// the unresolved sentinel.
func (a *attr) requireNoUnresolved(t *testing.T, m mirrored, since string) map[string]int {
	t.Helper()
	out, err := env.git.Git(a.s.repo, "log", "--format=%an", since+"..refs/heads/"+m.branch)
	require.NoError(t, err)
	byAuthor := map[string]int{}
	for _, author := range strings.Split(strings.TrimSpace(out), "\n") {
		if author != "" {
			byAuthor[author]++
		}
	}
	require.Zero(t, byAuthor[unresolvedAuthor], "commits on %s with the unresolved author: %v", m.branch, byAuthor)
	return byAuthor
}

// rollingRestartUnderLoad: a steady 20 changes/s by the two actors across
// the branches while every replica in turn is sent SIGTERM, started again
// and waited for to rejoin (every branch held as rendezvous over the three
// gives it). Then Git holds every object's last value, no commit since
// the step began has the unresolved author, and no replica's
// gitopsreverser_commits_total{author_kind="unresolved"} grew.
func (a *attr) rollingRestartUnderLoad(t *testing.T) {
	ctx := context.Background()
	heads := map[string]string{}
	for _, m := range a.s.branches {
		heads[m.branch] = a.s.head(t, m)
	}
	l := a.startLoad(20)
	unresolved := 0.0
	for _, id := range a.members {
		waitSettled(t, a.c, a.s, a.members)
		// Each replica stops under load: 40 more changes (two seconds of
		// it) since the last one rejoined.
		l.waitWrites(t, 40)
		r := a.c.get(id)
		n, err := commitsBy(ctx, r, "unresolved")
		require.NoError(t, err)
		unresolved += n
		r.terminate(t)
		select {
		case <-r.done:
		case <-time.After(patience):
			t.Fatalf("replica %s did not exit after SIGTERM; log %s", id, r.logPath)
		}
		a.c.start(t, id)
		waitSettled(t, a.c, a.s, a.members)
	}
	writes, rate, err := l.stop()
	require.NoError(t, err)
	t.Logf("load: %d changes at %.1f/s during the rolling restart", writes, rate)
	for _, m := range a.s.branches {
		for j := range loadObjects {
			var cm corev1.ConfigMap
			name := fmt.Sprintf("load-%d", j)
			require.NoError(t, env.kube.Client().Get(ctx, client.ObjectKey{Namespace: m.ns, Name: name}, &cm))
			a.waitValue(t, m, name, cm.Data["value"])
		}
	}
	for _, m := range a.s.branches {
		byAuthor := a.requireNoUnresolved(t, m, heads[m.branch])
		for author := range byAuthor {
			require.Contains(t, []string{a.actors[0].name, a.actors[1].name, committerName}, author, "a known author on %s", m.branch)
		}
		t.Logf("commits on %s during the rolling restart, by author: %v", m.branch, byAuthor)
	}
	attributed := 0.0
	for _, id := range a.members {
		n, err := commitsBy(ctx, a.c.get(id), "unresolved")
		require.NoError(t, err)
		unresolved += n
		for _, kind := range []string{"user", "serviceaccount"} {
			n, err := commitsBy(ctx, a.c.get(id), kind)
			require.NoError(t, err)
			attributed += n
		}
	}
	// The metric is read where it counts: the restarted replicas made
	// attributed commits, and none unresolved.
	require.Positive(t, attributed, "attributed commits by the restarted replicas' metrics")
	require.Zero(t, unresolved, "commits with the unresolved author, by the replicas' metrics")
}

// load writes the branches' load ConfigMaps at a steady rate until stop:
// one writer per ConfigMap, each writing its object in turn, so the rate
// does not depend on one write's round trip and each object's versions
// stay in order. Each branch has one actor (the i-th branch the actor
// i%2): a window never mixes authors, so actors taking turns on one
// branch would make a commit of every change, more than a forge without
// chained commits pushes (3 at once, then one a second).
type load struct {
	stopCh chan struct{}
	wg     sync.WaitGroup
	mu     sync.Mutex
	writes int
	// waited is writes when waitWrites last returned.
	waited int
	err    error
	began  time.Time
}

func (a *attr) startLoad(perSecond int) *load {
	l := &load{stopCh: make(chan struct{}), began: time.Now()}
	writers := len(a.s.branches) * loadObjects
	for w := range writers {
		i := w % len(a.s.branches)
		m, actor, name := a.s.branches[i], a.actors[i%2], fmt.Sprintf("load-%d", w/len(a.s.branches))
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			tick := time.NewTicker(time.Duration(writers) * time.Second / time.Duration(perSecond))
			defer tick.Stop()
			for n := 1; ; n++ {
				select {
				case <-l.stopCh:
					return
				case <-tick.C:
				}
				err := actor.write(context.Background(), m.ns, name, fmt.Sprintf("l%d", n))
				l.mu.Lock()
				if err != nil && l.err == nil {
					l.err = err
				}
				l.writes++
				l.mu.Unlock()
			}
		}()
	}
	return l
}

// waitWrites waits until the load made n more writes than when it was
// last called.
func (l *load) waitWrites(t *testing.T, n int) {
	t.Helper()
	l.mu.Lock()
	target := l.waited + n
	l.mu.Unlock()
	require.Eventually(t, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.writes >= target
	}, patience, 20*time.Millisecond, "%d writes of the load", target)
	l.mu.Lock()
	l.waited = l.writes
	l.mu.Unlock()
}

// stop ends the load and returns how many writes it made, at what rate,
// and its first error.
func (l *load) stop() (int, float64, error) {
	close(l.stopCh)
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.writes, float64(l.writes) / time.Since(l.began).Seconds(), l.err
}

// commitsBy is the replica's gitopsreverser_commits_total of author
// kind (unresolved, user, serviceaccount, committer), 0 before it made
// such a commit.
func commitsBy(ctx context.Context, r *replica, kind string) (float64, error) {
	return r.scrape(ctx, func(scanner *bufio.Scanner) (float64, error) {
		var sum float64
		for scanner.Scan() {
			line := scanner.Text()
			if strings.HasPrefix(line, "gitopsreverser_commits_total{") && strings.Contains(line, `author_kind="`+kind+`"`) {
				v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
				if err != nil {
					return 0, fmt.Errorf("parsing %q: %w", line, err)
				}
				sum += v
			}
		}
		if err := scanner.Err(); err != nil {
			return 0, fmt.Errorf("reading the metrics: %w", err)
		}
		return sum, nil
	})
}
