package branch

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	yaml "go.yaml.in/yaml/v3"

	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/internal/manifest"
	"github.com/configbutler/gitops-reverser/internal/retry"
)

// The core is driven here by tables of events in and actions out: no
// goroutine, no clock, no forge. Each step happens at t0 plus its offset;
// actions are rendered as short strings (renderActions) so a table reads
// as the worker's decisions.

var (
	t0     = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	coreTo = TargetKey{Namespace: "team", Name: "mirror"}
	ops    = Author{Name: "ops", Email: "ops@example.com", Kind: AuthorCommitter}
)

type coreStep struct {
	at     time.Duration
	queued int
	ev     Event
	want   []string
}

// testCore has a 5 s commit window, a burst of three pushes, one a second
// beyond it, and a retry backoff from 1 s (no jitter unless a FailedEvent
// draws some).
func testCore(tune func(*CoreConfig)) *Core {
	conf := CoreConfig{Committer: ops, BufferMax: 1 << 20, PushBurst: 3, PushInterval: time.Second,
		RetryBackoff: time.Second, MaxRetryBackoff: time.Minute}
	if tune != nil {
		tune(&conf)
	}
	c := NewCore(conf)
	c.Silence = 5 * time.Second
	return c
}

// chainingCore is a testCore whose forge takes chains of limit windows.
func chainingCore(limit int) *Core {
	c := testCore(nil)
	c.ChainLimit = limit
	return c
}

func runCore(t *testing.T, c *Core, steps []coreStep) {
	t.Helper()
	for i, s := range steps {
		c.Queued = s.queued
		require.Equal(t, s.want, renderActions(c.Step(t0.Add(s.at), s.ev)), "step %d (%T)", i, s.ev)
	}
}

func wrote(author Author, name string) WriteEvent {
	return WriteEvent{Target: coreTo, Author: author, Write: change(name)}
}

func committed(seqs ...uint64) CommittedEvent {
	var e CommittedEvent
	for _, s := range seqs {
		e.Windows = append(e.Windows, WindowResult{Seq: s, Committed: true, Commit: fmt.Sprint("c", s)})
	}
	e.Chained = len(seqs) > 1
	return e
}

func renderActions(actions []Action) []string {
	out := make([]string, 0, len(actions))
	for _, a := range actions {
		switch a := a.(type) {
		case Commit:
			var wins []string
			for _, win := range a.Windows {
				var names []string
				for _, wr := range win.orderedWrites() {
					names = append(names, wr.ID.Name)
				}
				s := win.target.Name + "/" + win.author.Name + ":" + strings.Join(names, ",")
				if win.message != "" {
					s += fmt.Sprintf(" %q", win.message)
				}
				wins = append(wins, s)
			}
			out = append(out, "commit "+strings.Join(wins, " | "))
		case Schedule:
			out = append(out, "schedule +"+a.At.Sub(t0).String())
		case Notify:
			out = append(out, renderOutcome(a.Outcome))
		}
	}
	return out
}

func renderOutcome(o Outcome) string {
	switch o.Kind {
	case OutcomeRequest:
		return strings.TrimSpace(fmt.Sprintf("request %s %s %s", o.Request.ID, o.Result.Reason, o.Result.Commit))
	case OutcomeWentThrough:
		return "went through " + o.Target.Name
	case OutcomeFailed:
		return "failed " + o.Target.Name + " retry in " + o.RetryIn.String()
	case OutcomeReplaying:
		return "replaying " + o.Target.Name + " in " + o.RetryIn.String()
	case OutcomeSettled:
		return fmt.Sprint("settled ", o.Waiter)
	case OutcomeFlushed:
		if o.Err != nil {
			return fmt.Sprint("flush failed ", o.Waiter)
		}
		return fmt.Sprint("flushed ", o.Waiter)
	}
	return "unknown outcome " + string(o.Kind)
}

func TestCoreAnotherAuthorClosesTheWindow(t *testing.T) {
	runCore(t, testCore(nil), []coreStep{
		{0, 0, wrote(alice, "one"), []string{"schedule +5s"}},
		{time.Second, 0, wrote(bob, "two"), []string{"commit mirror/Alice:one", "schedule +6s"}},
		{time.Second, 0, committed(0), []string{"went through mirror", "schedule +6s"}},
	})
}

func TestCoreSilenceClosesTheWindowOnATick(t *testing.T) {
	runCore(t, testCore(nil), []coreStep{
		{0, 0, wrote(alice, "one"), []string{"schedule +5s"}},
		{4 * time.Second, 0, wrote(alice, "two"), []string{"schedule +9s"}},
		{8 * time.Second, 0, TickEvent{}, []string{"schedule +9s"}},
		{9 * time.Second, 0, TickEvent{}, []string{"commit mirror/Alice:one,two", "schedule +1h0m9s"}},
		{9 * time.Second, 0, committed(0), []string{"went through mirror", "schedule +1h0m9s"}},
	})
}

func TestCoreAWriteWithNoActorJoinsTheCommittersWindow(t *testing.T) {
	runCore(t, testCore(nil), []coreStep{
		{0, 0, wrote(Author{}, "one"), []string{"schedule +5s"}},
		{0, 0, SyncEvent{Target: coreTo, Sweep: &Sweep{}, CloseWindow: true}, []string{"commit mirror/ops:one", "schedule +1h0m0s"}},
	})
}

func TestCoreAFailedCommitIsRetriedAfterTheBackoff(t *testing.T) {
	runCore(t, testCore(nil), []coreStep{
		{0, 0, wrote(alice, "one"), []string{"schedule +5s"}},
		{0, 0, CloseEvent{}, []string{"commit mirror/Alice:one", "schedule +1h0m0s"}},
		{0, 0, FailedEvent{Seq: 0, Err: forges.ErrConflict}, []string{"failed mirror retry in 1s", "schedule +1s"}},
		{500 * time.Millisecond, 0, TickEvent{}, []string{"schedule +1s"}},
		{time.Second, 0, TickEvent{}, []string{"commit mirror/Alice:one", "schedule +1h0m1s"}},
		{time.Second, 0, FailedEvent{Seq: 0, Err: forges.ErrConflict}, []string{"failed mirror retry in 2s", "schedule +3s"}},
		{3 * time.Second, 0, TickEvent{}, []string{"commit mirror/Alice:one", "schedule +1h0m3s"}},
		{3 * time.Second, 0, FailedEvent{Seq: 0, Err: forges.ErrConflict, Jitter: 0.5}, []string{"failed mirror retry in 5s", "schedule +8s"}},
		{8 * time.Second, 0, TickEvent{}, []string{"commit mirror/Alice:one", "schedule +1h0m8s"}},
		{8 * time.Second, 0, committed(0), []string{"went through mirror", "schedule +1h0m8s"}},
	})
}

func TestCoreATargetsOwnFailureParksOnlyThatTarget(t *testing.T) {
	other := TargetKey{Namespace: "team", Name: "other"}
	runCore(t, testCore(nil), []coreStep{
		{0, 0, wrote(alice, "one"), []string{"schedule +5s"}},
		{0, 0, WriteEvent{Target: other, Author: alice, Write: change("two")}, []string{"commit mirror/Alice:one", "schedule +5s"}},
		{0, 0, CloseEvent{}, []string{"schedule +1h0m0s"}},
		{0, 0, FailedEvent{Seq: 0, Err: errors.New("cannot plan")},
			[]string{"failed mirror retry in 1s", "commit other/Alice:two", "schedule +1h0m0s"}},
		{0, 0, committed(1), []string{"went through other", "schedule +1s"}},
		{time.Second, 0, TickEvent{}, []string{"commit mirror/Alice:one", "schedule +1h0m1s"}},
	})
}

// TestCoreAConflictIsReplayedAfterAGrowingWaitThenKeptForARetry: a window
// that meets a moved branch is committed again after the conflict
// backoff, as many times as MaxAttempts allows; meanwhile the Commit
// stays in flight (a window closed during the wait goes out after it), and
// past the bound the writes wait for the retry backoff like any failure.
func TestCoreAConflictIsReplayedAfterAGrowingWaitThenKeptForARetry(t *testing.T) {
	conflict := func(jitter float64) ConflictEvent {
		return ConflictEvent{Seq: 0, Err: forges.ErrConflict, Jitter: jitter}
	}
	runCore(t, testCore(func(c *CoreConfig) {
		c.MaxAttempts = 3
		c.ConflictBackoff = retry.Exponential(100*time.Millisecond, 5*time.Second)
	}), []coreStep{
		{0, 0, wrote(alice, "one"), []string{"schedule +5s"}},
		{0, 0, CloseEvent{}, []string{"commit mirror/Alice:one", "schedule +1h0m0s"}},
		{0, 0, conflict(0), []string{"replaying mirror in 100ms", "schedule +100ms"}},
		{50 * time.Millisecond, 0, wrote(bob, "two"), []string{"schedule +100ms"}},
		{60 * time.Millisecond, 0, CloseEvent{}, []string{"schedule +100ms"}},
		{100 * time.Millisecond, 0, TickEvent{}, []string{"commit mirror/Alice:one", "schedule +1h0m0.1s"}},
		{100 * time.Millisecond, 0, conflict(0.5), []string{"replaying mirror in 250ms", "schedule +350ms"}},
		{350 * time.Millisecond, 0, TickEvent{}, []string{"commit mirror/Alice:one", "schedule +1h0m0.35s"}},
		{350 * time.Millisecond, 0, conflict(0), []string{"failed mirror retry in 1s", "schedule +1.35s"}},
		{1350 * time.Millisecond, 0, TickEvent{}, []string{"commit mirror/Alice:one", "schedule +1h0m1.35s"}},
		{1350 * time.Millisecond, 0, conflict(0), []string{"replaying mirror in 100ms", "schedule +1.45s"}},
		{1450 * time.Millisecond, 0, TickEvent{}, []string{"commit mirror/Alice:one", "schedule +1h0m1.45s"}},
		{1450 * time.Millisecond, 0, committed(0), []string{"went through mirror", "commit mirror/Bob:two", "schedule +1h0m1.45s"}},
	})
}

// TestCoreAStopEndsAReplaysWait: the stop's last try replaces the wait.
func TestCoreAStopEndsAReplaysWait(t *testing.T) {
	runCore(t, testCore(func(c *CoreConfig) { c.MaxAttempts = 5; c.ConflictBackoff = retry.Exponential(time.Hour, time.Hour) }), []coreStep{
		{0, 0, wrote(alice, "one"), []string{"schedule +5s"}},
		{0, 0, CloseEvent{}, []string{"commit mirror/Alice:one", "schedule +1h0m0s"}},
		{0, 0, ConflictEvent{Seq: 0, Err: forges.ErrConflict}, []string{"replaying mirror in 1h0m0s", "schedule +1h0m0s"}},
		{time.Second, 0, StopEvent{}, []string{"commit mirror/Alice:one", "schedule +1h0m1s"}},
	})
}

// TestCoreARefusedChainSendsItsFirstWindowAlone: nothing of a refused
// chain is on the branch; its first window goes alone, and the push then
// chains the rest again.
func TestCoreARefusedChainSendsItsFirstWindowAlone(t *testing.T) {
	runCore(t, chainingCore(10), []coreStep{
		{0, 1, wrote(alice, "one"), []string{"schedule +5s"}},
		{0, 1, wrote(bob, "two"), []string{"schedule +5s"}},
		{0, 1, wrote(alice, "three"), []string{"schedule +5s"}},
		{0, 0, CloseEvent{}, []string{"commit mirror/Alice:one | mirror/Bob:two | mirror/Alice:three", "schedule +1h0m0s"}},
		{0, 0, ChainRefusedEvent{Seq: 0}, []string{"commit mirror/Alice:one", "schedule +1h0m0s"}},
		{0, 0, committed(0), []string{"went through mirror", "commit mirror/Bob:two | mirror/Alice:three", "schedule +1h0m0s"}},
		{0, 0, committed(1, 2), []string{"went through mirror", "went through mirror", "schedule +1h0m0s"}},
	})
}

// TestCoreTheBudgetSpacesABacklogButNotAWindowAlone: windows piled up
// behind a forge that asked to wait go out one per interval once the
// burst is spent; the last, waiting alone, goes out at once.
func TestCoreTheBudgetSpacesABacklogButNotAWindowAlone(t *testing.T) {
	runCore(t, testCore(func(c *CoreConfig) { c.PushBurst = 1 }), []coreStep{
		{0, 0, wrote(alice, "one"), []string{"schedule +5s"}},
		{0, 0, wrote(bob, "two"), []string{"commit mirror/Alice:one", "schedule +5s"}},
		{0, 0, FailedEvent{Seq: 0, Err: forges.ErrTransient}, []string{"failed mirror retry in 1s", "schedule +1s"}},
		{0, 0, wrote(alice, "three"), []string{"schedule +1s"}},
		{0, 0, CloseEvent{}, []string{"schedule +1s"}},
		{time.Second, 0, TickEvent{}, []string{"commit mirror/Alice:one", "schedule +1h0m1s"}},
		{time.Second, 0, committed(0), []string{"went through mirror", "schedule +2s"}},
		{1500 * time.Millisecond, 0, TickEvent{}, []string{"schedule +2s"}},
		{2 * time.Second, 0, TickEvent{}, []string{"commit mirror/Bob:two", "schedule +1h0m2s"}},
		{2 * time.Second, 0, committed(1), []string{"went through mirror", "commit mirror/Alice:three", "schedule +1h0m2s"}},
	})
}

func TestCoreARequestClosesItsWindowAtTheDeadlineAndIsToldTheCommit(t *testing.T) {
	req := &Request{ID: "team/save", Target: coreTo, Submitter: &alice, Deadline: t0.Add(2 * time.Second), Message: "Release"}
	late := &Request{ID: "team/late", Target: coreTo, Submitter: &bob, Deadline: t0.Add(time.Second)}
	runCore(t, testCore(nil), []coreStep{
		{0, 0, wrote(alice, "one"), []string{"schedule +5s"}},
		{0, 0, AttachEvent{Request: req}, []string{"schedule +2s"}},
		{0, 0, AttachEvent{Request: late}, []string{"schedule +1s"}},
		{time.Second, 0, TickEvent{}, []string{"request team/late WindowMismatch", "schedule +2s"}},
		{2 * time.Second, 0, TickEvent{}, []string{`commit mirror/Alice:one "Release"`, "schedule +1h0m2s"}},
		{2 * time.Second, 0, committed(0), []string{"request team/save Committed c0", "went through mirror", "schedule +1h0m2s"}},
	})
}

func TestCoreSettleAndFlushWaitersAreAnsweredOnceTheCommitLands(t *testing.T) {
	runCore(t, testCore(nil), []coreStep{
		{0, 0, wrote(alice, "one"), []string{"schedule +5s"}},
		{0, 0, SettleEvent{ID: 1, Target: coreTo}, []string{"schedule +5s"}},
		{0, 0, FlushEvent{ID: 2, Target: coreTo}, []string{"commit mirror/Alice:one", "schedule +1h0m0s"}},
		{0, 0, committed(0), []string{"went through mirror", "flushed 2", "settled 1", "schedule +1h0m0s"}},
		{0, 0, SettleEvent{ID: 3, Target: coreTo}, []string{"settled 3", "schedule +1h0m0s"}},
	})
}

// TestCoreWindowsClosedWhileEventsQueueGoOutAsOneChain: each change of
// author closes a window, but while events wait behind it the core
// gathers; once the queue is empty the windows go out as one Commit.
func TestCoreWindowsClosedWhileEventsQueueGoOutAsOneChain(t *testing.T) {
	runCore(t, chainingCore(10), []coreStep{
		{0, 3, wrote(alice, "one"), []string{"schedule +5s"}},
		{0, 2, wrote(bob, "two"), []string{"schedule +5s"}},
		{0, 1, wrote(alice, "three"), []string{"schedule +5s"}},
		{0, 0, wrote(bob, "four"), []string{"commit mirror/Alice:one | mirror/Bob:two | mirror/Alice:three", "schedule +5s"}},
		{0, 0, committed(0, 1, 2), []string{"went through mirror", "went through mirror", "went through mirror", "schedule +5s"}},
	})
}

func TestCoreAChainStopsAtItsLimitAndAtAParkedTarget(t *testing.T) {
	runCore(t, chainingCore(2), []coreStep{
		{0, 5, wrote(alice, "one"), []string{"schedule +5s"}},
		{0, 4, wrote(bob, "two"), []string{"schedule +5s"}},
		{0, 3, wrote(alice, "three"), []string{"commit mirror/Alice:one | mirror/Bob:two", "schedule +5s"}},
	})
}

// TestCoreStateRoundTripsThroughJSON: a core journaled mid-window, with a
// failure parked, a request and a settle waiter held, and restored from
// the journal decides exactly as the one that kept running.
func TestCoreStateRoundTripsThroughJSON(t *testing.T) {
	running := testCore(nil)
	req := &Request{ID: "team/save", Target: coreTo, Submitter: &bob, Deadline: t0.Add(3 * time.Second), Message: "Bob's"}
	runCore(t, running, []coreStep{
		{0, 0, wrote(alice, "one"), []string{"schedule +5s"}},
		{0, 0, wrote(bob, "two"), []string{"commit mirror/Alice:one", "schedule +5s"}},
		{0, 0, FailedEvent{Seq: 0, Err: errors.New("cannot plan")}, []string{"failed mirror retry in 1s", "schedule +1s"}},
		{0, 0, AttachEvent{Request: req}, []string{"schedule +1s"}},
		{0, 0, SettleEvent{ID: 7, Target: coreTo}, []string{"schedule +1s"}},
	})
	journal, err := json.Marshal(running)
	require.NoError(t, err)
	restored := &Core{}
	require.NoError(t, json.Unmarshal(journal, restored))
	again, err := json.Marshal(restored)
	require.NoError(t, err)
	require.JSONEq(t, string(journal), string(again))

	next := []coreStep{
		{time.Second, 0, TickEvent{}, []string{"commit mirror/Alice:one", "schedule +3s"}},
		{time.Second, 0, committed(0), []string{"went through mirror", "schedule +3s"}},
		{2 * time.Second, 0, wrote(bob, "three"), []string{"schedule +3s"}},
		{3 * time.Second, 0, TickEvent{}, []string{`commit mirror/Bob:two,three "Bob's"`, "schedule +1h0m3s"}},
		{3 * time.Second, 0, committed(1), []string{"request team/save Committed c1", "went through mirror", "settled 7", "schedule +1h0m3s"}},
	}
	runCore(t, running, next)
	runCore(t, restored, next)
}

// TestCoreJournalsNoRenderedTree: a write's rendered tree is a cache for
// the planner, not state: the journal holds its YAML only, and the write
// restored from it has no tree (the planner then parses the YAML once).
func TestCoreJournalsNoRenderedTree(t *testing.T) {
	running := testCore(nil)
	ev := wrote(alice, "one")
	ev.Write.Node = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	running.Step(t0, ev)
	journal, err := json.Marshal(running)
	require.NoError(t, err)
	require.NotContains(t, string(journal), "Node")
	restored := &Core{}
	require.NoError(t, json.Unmarshal(journal, restored))
	for _, wr := range restored.window.writes {
		require.Nil(t, wr.Node)
		require.Equal(t, ev.Write.YAML, wr.YAML)
	}
	require.Len(t, restored.window.writes, 1)
}

// TestCoreAnUnfinishedReplayHoldsItsWindow: a replay's window outlasts a
// 1 ms silence until the target's last stream says its replay is done.
func TestCoreAnUnfinishedReplayHoldsItsWindow(t *testing.T) {
	c := testCore(nil)
	c.Silence = time.Millisecond
	one := WriteEvent{Target: coreTo, Write: replayed("one", "cm")}
	two := WriteEvent{Target: coreTo, Write: replayed("two", "cm")}
	runCore(t, c, []coreStep{
		{0, 0, one, []string{"schedule +5s"}},
		{time.Second, 0, SyncEvent{Target: coreTo, Sweep: &Sweep{}}, []string{"schedule +6s"}},
		{2 * time.Second, 0, TickEvent{}, []string{"schedule +6s"}},
		{3 * time.Second, 0, two, []string{"schedule +8s"}},
		{4 * time.Second, 0, SyncEvent{Target: coreTo, Sweep: &Sweep{}, CloseWindow: true}, []string{"commit mirror/ops:cm,cm", "schedule +1h0m4s"}},
	})
}

func TestCoreAFullBufferClosesTheWindow(t *testing.T) {
	runCore(t, testCore(func(c *CoreConfig) { c.BufferMax = len(change("one").YAML) + 1 }), []coreStep{
		{0, 0, wrote(alice, "one"), []string{"schedule +5s"}},
		{0, 0, wrote(alice, "two"), []string{"commit mirror/Alice:one,two", "schedule +1h0m0s"}},
	})
}

// TestCoreASuspendedTargetDropsWhatItHolds: its window, its pending
// commits and the requests waiting on them; its waiters are answered.
func TestCoreASuspendedTargetDropsWhatItHolds(t *testing.T) {
	req := &Request{ID: "team/save", Target: coreTo, Submitter: &bob, Deadline: t0.Add(time.Hour)}
	runCore(t, testCore(nil), []coreStep{
		{0, 0, wrote(alice, "one"), []string{"schedule +5s"}},
		{0, 0, wrote(bob, "two"), []string{"commit mirror/Alice:one", "schedule +5s"}},
		{0, 0, FailedEvent{Seq: 0, Err: forges.ErrTransient}, []string{"failed mirror retry in 1s", "schedule +1s"}},
		{0, 0, SettleEvent{ID: 1, Target: coreTo}, []string{"schedule +1s"}},
		{0, 0, FlushEvent{ID: 2, Target: coreTo}, []string{"schedule +1s"}},
		{0, 0, wrote(bob, "three"), []string{"schedule +1s"}},
		{0, 0, AttachEvent{Request: req}, []string{"schedule +1s"}},
		{0, 0, TargetEvent{Target: coreTo, Suspend: true},
			[]string{"request team/save FinalizeFailed", "settled 1", "flushed 2", "schedule +1h0m0s"}},
		{2 * time.Second, 0, TickEvent{}, []string{"schedule +1h0m2s"}},
	})
}

// TestCoreAStopPushesWhatItHoldsRegardlessOfTheBackoff, unless the worker
// was replaced: then it drops it, and every request ends.
func TestCoreAStopPushesWhatItHoldsRegardlessOfTheBackoff(t *testing.T) {
	held := func() []coreStep {
		return []coreStep{
			{0, 0, wrote(alice, "one"), []string{"schedule +5s"}},
			{0, 0, wrote(bob, "two"), []string{"commit mirror/Alice:one", "schedule +5s"}},
			{0, 0, FailedEvent{Seq: 0, Err: forges.ErrTransient}, []string{"failed mirror retry in 1s", "schedule +1s"}},
		}
	}
	carol := Author{Name: "Carol", Email: "carol@example.com", Kind: AuthorUser}
	req := &Request{ID: "team/save", Target: coreTo, Submitter: &carol, Deadline: t0.Add(time.Hour)}
	// Stopping, it pushes what it holds as one chain even while events
	// queue: nothing is gathered any more.
	runCore(t, chainingCore(10), append(held(),
		coreStep{0, 3, StopEvent{}, []string{"commit mirror/Alice:one | mirror/Bob:two", "schedule +1h0m0s"}},
		coreStep{0, 3, committed(0, 1), []string{"went through mirror", "went through mirror", "schedule +1h0m0s"}},
		coreStep{0, 0, StoppedEvent{}, []string{"schedule +1h0m0s"}},
	))
	runCore(t, testCore(nil), append(held(),
		coreStep{0, 0, AttachEvent{Request: req}, []string{"schedule +1s"}},
		coreStep{0, 0, StopEvent{Discard: true}, []string{"request team/save FinalizeFailed", "schedule +1h0m0s"}},
		coreStep{0, 0, StoppedEvent{}, []string{"schedule +1h0m0s"}},
	))
}

// TestCoreARequestedWindowIsNeverMergedWithAnother: windows held behind a
// failure merge, but not into or out of a window a request closed.
func TestCoreARequestedWindowIsNeverMergedWithAnother(t *testing.T) {
	req := &Request{ID: "team/save", Target: coreTo, Submitter: &alice, Deadline: t0, Message: "hers"}
	runCore(t, testCore(nil), []coreStep{
		{0, 0, wrote(bob, "zero"), []string{"schedule +5s"}},
		{0, 0, CloseEvent{}, []string{"commit mirror/Bob:zero", "schedule +1h0m0s"}},
		{0, 0, FailedEvent{Seq: 0, Err: forges.ErrTransient}, []string{"failed mirror retry in 1s", "schedule +1s"}},
		{0, 0, wrote(alice, "one"), []string{"schedule +1s"}},
		{0, 0, AttachEvent{Request: req}, []string{"request team/save FinalizeFailed", "schedule +1s"}},
		{0, 0, wrote(alice, "two"), []string{"schedule +1s"}},
		{0, 0, CloseEvent{}, []string{"schedule +1s"}},
		{0, 0, wrote(alice, "three"), []string{"schedule +1s"}},
		{0, 0, CloseEvent{}, []string{"schedule +1s"}},
		{time.Second, 0, TickEvent{}, []string{"commit mirror/Bob:zero", "schedule +1h0m1s"}},
		{time.Second, 0, committed(0), []string{"went through mirror", `commit mirror/Alice:one "hers"`, "schedule +1h0m1s"}},
		{time.Second, 0, committed(1), []string{"went through mirror", "commit mirror/Alice:two,three", "schedule +1h0m1s"}},
	})
}

// A committed window leaves nothing of itself behind: the slot pending
// freed no longer points at it, so its writes (a whole replay's YAML) are
// garbage once the commit lands.
func TestCoreACommittedWindowIsNotKeptInPendingsSpareCapacity(t *testing.T) {
	c := testCore(nil)
	runCore(t, c, []coreStep{
		{0, 0, wrote(alice, "one"), []string{"schedule +5s"}},
		{time.Second, 0, wrote(bob, "two"), []string{"commit mirror/Alice:one", "schedule +6s"}},
		{time.Second, 0, committed(0), []string{"went through mirror", "schedule +6s"}},
	})
	require.Empty(t, c.pending)
	for _, held := range c.pending[:cap(c.pending)][len(c.pending):] {
		require.Nil(t, held, "a committed window is still referenced")
	}
}

// TestCoreAFullReplayWindowPassesItsSweepsOn: a replay that fills a window
// is committed in parts; the sweeps of the streams that finished go to the
// window that continues the replay, so its last commit deletes what the
// whole replay did not name.
func TestCoreAFullReplayWindowPassesItsSweepsOn(t *testing.T) {
	one := WriteEvent{Target: coreTo, Write: replayed("one", "cm")}
	two := WriteEvent{Target: coreTo, Write: replayed("two", "cm")}
	three := WriteEvent{Target: coreTo, Write: replayed("three", "cm")}
	c := testCore(func(c *CoreConfig) { c.BufferMax = len(one.Write.YAML) + len(two.Write.YAML) })
	sweep := func(ns string) *Sweep { s := Sweep{}; s.Scope.Namespace = ns; return &s }
	var commits [][]*window
	step := func(at time.Duration, ev Event) {
		for _, a := range c.Step(t0.Add(at), ev) {
			if commit, ok := a.(Commit); ok {
				commits = append(commits, commit.Windows)
			}
		}
	}
	step(0, one)
	step(time.Millisecond, SyncEvent{Target: coreTo, Sweep: sweep("a")})
	step(2*time.Millisecond, two)
	step(3*time.Millisecond, three)
	require.Len(t, commits, 1, "the full window went out")
	require.Len(t, commits[0], 1)
	require.Empty(t, commits[0][0].sweeps, "its sweep waits for the rest of the replay")
	require.Len(t, commits[0][0].writes, 2)
	step(4*time.Millisecond, committed(commits[0][0].seq))
	step(5*time.Millisecond, SyncEvent{Target: coreTo, Sweep: sweep("b"), CloseWindow: true})
	require.Len(t, commits, 2)
	last := commits[1][0]
	require.Len(t, last.writes, 1, "the replay's third object")
	require.Equal(t, []string{"a", "b"}, []string{last.sweeps[0].Scope.Namespace, last.sweeps[1].Scope.Namespace})
	require.True(t, last.reconcile)
}

// commitsOf steps c through events at t0 plus one millisecond each and
// returns the windows of every Commit it asked for, in order.
func commitsOf(c *Core, events ...Event) [][]*window {
	var commits [][]*window
	for i, ev := range events {
		for _, a := range c.Step(t0.Add(time.Duration(i)*time.Millisecond), ev) {
			if commit, ok := a.(Commit); ok {
				commits = append(commits, commit.Windows)
			}
		}
	}
	return commits
}

// TestCoreACarriedSweepKeepsWhatCameAfterIt: an object created live after
// a stream's sweep (with no author, so in the replay's window) is
// committed with the full window; the sweep, carried on, must not delete
// it, so it joins the sweep's present set.
func TestCoreACarriedSweepKeepsWhatCameAfterIt(t *testing.T) {
	kept := replayed("team", "kept")
	created := change("created")
	filler := replayed("other", "filler")
	c := testCore(func(c *CoreConfig) { c.BufferMax = len(kept.YAML) + len(created.YAML) + len(filler.YAML) })
	scope := manifest.SweepScope{Kind: "ConfigMap", Namespace: "team"}
	commits := commitsOf(c,
		WriteEvent{Target: coreTo, Write: kept},
		SyncEvent{Target: coreTo, Sweep: &Sweep{Scope: scope, Present: []manifest.ObjectID{kept.ID}}},
		WriteEvent{Target: coreTo, Write: created},
		WriteEvent{Target: coreTo, Write: filler})
	require.Len(t, commits, 1)
	require.Len(t, commits[0][0].writes, 3, "the live creation is committed with the full window")
	commits = commitsOf(c, committed(commits[0][0].seq), SyncEvent{Target: coreTo, Sweep: &Sweep{}, CloseWindow: true})
	require.Len(t, commits, 1)
	carried := commits[0][0].sweeps[0]
	require.Equal(t, scope, carried.Scope)
	present := map[string]bool{}
	for name := range carried.Found() { // the sweep's scope fixes the rest of the identity
		present[name] = true
	}
	require.Equal(t, map[string]bool{kept.ID.Name: true, created.ID.Name: true}, present)
}

// TestCoreACarriedSweepIsJournaledAndAwaitedWithItsWindow: the filling
// write is recorded in the window it went into, and until the window the
// sweeps moved to is committed the filled window's journal entries are
// held and a settle waiter of that time still waits.
func TestCoreACarriedSweepIsJournaledAndAwaitedWithItsWindow(t *testing.T) {
	one := WriteEvent{Target: coreTo, Write: replayed("a", "one")}
	two := WriteEvent{Target: coreTo, Write: replayed("a", "two")}
	c := testCore(func(c *CoreConfig) { c.BufferMax = len(one.Write.YAML) + len(two.Write.YAML) })
	c.Step(t0, one)
	c.Step(t0, SyncEvent{Target: coreTo, Sweep: &Sweep{}})
	c.Step(t0, SettleEvent{ID: 9, Target: coreTo})
	full := c.window.seq
	var commits [][]*window
	for _, a := range c.Step(t0, two) {
		if commit, ok := a.(Commit); ok {
			commits = append(commits, commit.Windows)
		}
	}
	require.Equal(t, full, c.LastWindow(), "the filling write is the full window's")
	require.Len(t, commits, 1)
	require.NotEqual(t, full, c.window.seq, "the sweep waits in the next window")

	require.NotContains(t, renderActions(c.Step(t0, committed(full))), "settled 9",
		"the waiter waits for the sweep, not only for the window it was made in")
	require.True(t, c.HeldWindows()[full], "the sweep's journal entry is kept")
	require.Contains(t, renderActions(c.Step(t0, SyncEvent{Target: coreTo, Sweep: &Sweep{}, CloseWindow: true})), "commit mirror/ops:")
	require.Contains(t, renderActions(c.Step(t0, committed(c.pending[0].seq))), "settled 9")
	require.Empty(t, c.HeldWindows())
}
