package bench

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/configbutler/gitops-reverser/internal/attribution"
	"github.com/configbutler/gitops-reverser/test/harness"
)

// Scenario I's edit-to-commit figures (issue 22).
const (
	// observedEdits is how many edits one run times, back to back.
	observedEdits = 20
	// observedEditRounds is how many times the pair of runs (observer off,
	// then on) repeats.
	observedEditRounds = 3
	// addedEditToCommitTarget is the bound on what the observer
	// adds to edit → commit, in milliseconds: both sides have the same
	// commit window, so what the observer may add beyond it is the
	// difference of the two.
	addedEditToCommitTarget = 100
)

// editRun is one timed run of observedEdits edits.
type editRun struct {
	latencies []time.Duration
	// unauthored counts the edits whose commit does not name the editor
	// (observer runs only).
	unauthored int
	// resolutionWait is the operator's mean wait for a confirmed review
	// per watch event during the edits (observer runs only).
	resolutionWait time.Duration
	load           float64
}

// BenchmarkObserverEditToCommit is scenario I, edit → commit: B back to
// back (a 100 ms commit window, the next edit once the last is in Git),
// the edits made by an impersonated person, once with the operator in
// configured-author mode and once attributing from the admission observer
// alone, on the same API server and mirror. The pair repeats
// observedEditRounds times, off first. With the observer, every commit
// must name the editor.
func BenchmarkObserverEditToCommit(b *testing.B) {
	observedEditsToCommit(b, "I observer: edit to commit", "observed-edits")
}

// BenchmarkObserverEditToCommitRedis is the same with the facts carried
// through a real redis-server (as with more than one replica): each event
// waits until this process has followed every review published before it,
// not a fixed settle.
func BenchmarkObserverEditToCommitRedis(b *testing.B) {
	redis, err := harness.StartRedis(b.TempDir())
	require.NoError(b, err)
	b.Cleanup(redis.Stop)
	observedEditsToCommit(b, "I observer: edit to commit, Redis transport", "observed-redis",
		"--redis-addr="+redis.Addr(), "--redis-key-prefix="+uniqueName("observer-facts")+":")
}

// observedEditsToCommit runs the rounds of edit → commit on a mirror of
// its own, every operator run with extra arguments.
func observedEditsToCommit(b *testing.B, title, name string, extra ...string) {
	e := observerEnv(b)
	ctx := context.Background()
	r := newReporter(b, title, forgeGit)
	name = uniqueName(name)
	m, err := newMirror(ctx, e, name, mirrorOptions{commitWindow: latencyCommitWindow})
	require.NoError(b, err)
	b.Cleanup(func() { require.NoError(b, m.retire(ctx, e)) })
	editor, err := e.kube.ClientAs(editorName, "system:masters")
	require.NoError(b, err)
	edited := client.ObjectKey{Namespace: name, Name: "edited"}
	servingProbe := client.ObjectKey{Namespace: name, Name: "serving-probe"}
	for _, key := range []client.ObjectKey{edited, servingProbe} {
		require.NoError(b, e.client().Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: key.Name},
			Data: map[string]string{"key-0": "initial"}}))
	}
	s := editSession{e: e, m: m, editor: editor, edited: edited, servingProbe: servingProbe, current: "initial", extra: extra}
	var off, on []editRun
	for round := range observedEditRounds {
		off = append(off, s.timeEdits(b, fmt.Sprintf("%s-off-%d", name, round), false))
		on = append(on, s.timeEdits(b, fmt.Sprintf("%s-on-%d", name, round), true))
	}
	reportObservedEdits(r, off, on)
}

// editSession is the mirror and the objects the runs share; current is
// the edited ConfigMap's latest value.
type editSession struct {
	e                    *benchEnv
	m                    *mirror
	editor               client.Client
	edited, servingProbe client.ObjectKey
	current              string
	probes               int
	// extra are arguments of every operator run.
	extra []string
}

// timeEdits starts an operator run (attributing from the observer when
// observed), waits until it holds the edited ConfigMap's latest value and
// the observer reviews writes (or none reaches it), and times
// observedEdits edits.
func (s *editSession) timeEdits(b *testing.B, run string, observed bool) editRun {
	b.Helper()
	ctx := context.Background()
	file := s.edited.Namespace + "/configmaps/" + s.edited.Name + ".yaml"
	probe := func(ctx context.Context) error {
		s.probes++
		return patchValue(ctx, s.e.client(), s.servingProbe, fmt.Sprintf("probe-%d", s.probes))
	}
	observedOp := startObservedRun(b, s.e, s.m, run, observed, probe, s.extra...)
	defer observedOp.stop(b, s.e)
	op := observedOp.op
	_, err := pollHeads(ctx, s.m.remote, op, 100*time.Millisecond, time.Minute, fileContains(s.m, file, s.current))
	require.NoError(b, err, "waiting for the edited ConfigMap in Git")
	require.NoError(b, waitReady(ctx, s.e, s.m, op, time.Minute))
	observedOp.waitReviews(b, s.e, "configmaps")

	loadBefore, err := loadAverage()
	require.NoError(b, err)
	metricsBefore, err := op.scrape(ctx)
	require.NoError(b, err)
	res := editRun{latencies: make([]time.Duration, 0, observedEdits)}
	for i := range observedEdits {
		value := fmt.Sprintf("edit-%d-of-%s", i, run)
		start := time.Now()
		require.NoError(b, patchValue(ctx, s.editor, s.edited, value))
		s.current = value
		seen, err := pollHeads(ctx, s.m.remote, op, latencyPoll, editTimeout, fileContains(s.m, file, value))
		require.NoError(b, err, "waiting for edit %d in Git", i)
		res.latencies = append(res.latencies, seen.Sub(start))
		if !observed {
			continue
		}
		author, err := s.m.remote.(bareRemote).lastAuthor(ctx, file)
		if err != nil || !strings.HasPrefix(author, editorName+" ") {
			res.unauthored++
		}
	}
	loadAfter, err := loadAverage()
	require.NoError(b, err)
	metricsAfter, err := op.scrape(ctx)
	require.NoError(b, err)
	res.load = max(loadBefore, loadAfter)
	res.resolutionWait = meanResolutionWait(metricsBefore, metricsAfter)
	b.Logf("run %s: p50 %.0f ms, p90 %.0f ms, max %.0f ms; %d edits not authored by the editor; mean attribution wait %.0f ms (%s); load %.2f → %.2f",
		run, milliseconds(percentile(res.latencies, 50)), milliseconds(percentile(res.latencies, 90)),
		milliseconds(percentile(res.latencies, 100)), res.unauthored, milliseconds(res.resolutionWait),
		waitsByTier(metricsBefore, metricsAfter), loadBefore, loadAfter)
	return res
}

// meanResolutionWait is the mean time a watch event answered by a
// confirmed review waited for it between two scrapes (zero without
// attribution). Events of other tiers are left out: a probe write made
// before the observer was called is resolved unattributed a whole grace
// later, during the edits, and says nothing of an edit's wait.
func meanResolutionWait(before, after metricSamples) time.Duration {
	const family = "gitopsreverser_attribution_resolution_wait_seconds"
	label := `tier="` + string(attribution.TierAdmission) + `"`
	n := after.sum(family+"_count", label) - before.sum(family+"_count", label)
	if n == 0 {
		return 0
	}
	return time.Duration((after.sum(family+"_sum", label) - before.sum(family+"_sum", label)) / n * float64(time.Second))
}

// waitsByTier says, per tier, how many watch events were resolved between
// two scrapes and their mean wait, and how the settle barriers ended.
func waitsByTier(before, after metricSamples) string {
	const family = "gitopsreverser_attribution_resolution_wait_seconds"
	var parts []string
	for _, tier := range attribution.Tiers {
		label := `tier="` + string(tier) + `"`
		n := after.sum(family+"_count", label) - before.sum(family+"_count", label)
		if n == 0 {
			continue
		}
		mean := (after.sum(family+"_sum", label) - before.sum(family+"_sum", label)) / n
		parts = append(parts, fmt.Sprintf("%s: %.0f, mean %.1f ms", tier, n, mean*1000))
	}
	const barriers = "gitopsreverser_attribution_settle_barriers_total"
	for _, outcome := range []string{"reached", "not_reached"} {
		label := `outcome="` + outcome + `"`
		parts = append(parts, fmt.Sprintf("barrier %s: %.0f", outcome, after.sum(barriers, label)-before.sum(barriers, label)))
	}
	return strings.Join(parts, "; ")
}

// reportObservedEdits records both sides' edit → commit and what the
// observer adds per round (on minus the off run just before it).
func reportObservedEdits(r reporter, off, on []editRun) {
	r.b.Helper()
	var offP50, onP50, addedP50, addedP90, waits, loads []float64
	unauthored := 0
	for i := range on {
		offP50 = append(offP50, milliseconds(percentile(off[i].latencies, 50)))
		onP50 = append(onP50, milliseconds(percentile(on[i].latencies, 50)))
		addedP50 = append(addedP50, milliseconds(percentile(on[i].latencies, 50)-percentile(off[i].latencies, 50)))
		addedP90 = append(addedP90, milliseconds(percentile(on[i].latencies, 90)-percentile(off[i].latencies, 90)))
		unauthored += on[i].unauthored
		waits = append(waits, milliseconds(on[i].resolutionWait))
		loads = append(loads, off[i].load, on[i].load)
	}
	r.reportSpread("observer off: edit → commit p50", offP50, "ms", 0)
	r.reportSpread("observer on: edit → commit p50", onP50, "ms", 0)
	r.reportSpread("added by the observer: p50", addedP50, "ms", addedEditToCommitTarget)
	r.reportSpread("added by the observer: p90", addedP90, "ms", 0)
	r.reportSpread("observer on: the operator's wait for a confirmed review (mean)", waits, "ms", 0)
	r.atMost("observer on: edits not authored by their editor", float64(unauthored), "", 0)
	r.info("load average (1 min), highest seen", spreadOf(loads).max, "")
	r.info("load average (1 min), lowest seen", spreadOf(loads).min, "")
}
