package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Scenario I's write-path figures (issue 22).
const (
	// observedWrites is how many writes one run times.
	observedWrites = 1000
	// observedRounds is how many times the pair of runs (observer off, then
	// on) repeats: the spread of each figure is over these.
	observedRounds = 5
	// observedWarmUp writes open the client's and the API server's
	// connections before a run is timed.
	observedWarmUp = 50
	// observedConfigMaps are written in turn, like a handful of objects a
	// team edits.
	observedConfigMaps = 10
	// addedWriteP99Target is the bound on what the observer adds to
	// a write's p99, in milliseconds.
	addedWriteP99Target = 5
)

// writeRun is one timed run of observedWrites writes.
type writeRun struct {
	p50, p99 time.Duration
	// controlP50 and controlP99 are of the writes interleaved with them
	// to a namespace that is not mirrored, so never reviewed: the same
	// run's load without the observer.
	controlP50, controlP99 time.Duration
	// calls is how many calls the API server made to the observer during
	// the timed writes, and callSeconds the time it spent in them.
	calls, callSeconds float64
	// queued is how many facts the observer published for them.
	queued float64
	// operatorCPU is the operator's CPU time during the timed writes.
	operatorCPU float64
	// load is the highest one-minute load average seen around the run.
	load float64
}

// BenchmarkObserverWriteLatency is scenario I, the write path: the
// latency of observedWrites sequential ConfigMap merge patches (what
// `kubectl patch` and `kubectl edit` send) from one client, with the
// operator running and mirroring them, once with the admission observer
// reviewing every write and once without it (the operator in
// configured-author mode, the observer's configuration removed), on the
// same API server. The pair repeats observedRounds times, off first.
// Every timed write is followed by one to a namespace that is not
// mirrored (never reviewed): in an on run those are the same moment's
// writes without the observer, which the load between runs cannot
// tell apart.
func BenchmarkObserverWriteLatency(b *testing.B) {
	e := observerEnv(b)
	ctx := context.Background()
	r := newReporter(b, "I observer: writes", forgeGit)
	name := uniqueName("observed-writes")
	m, err := newMirror(ctx, e, name, mirrorOptions{})
	require.NoError(b, err)
	control := name + "-unmirrored"
	b.Cleanup(func() { require.NoError(b, m.retire(ctx, e, control)) })
	require.NoError(b, e.client().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: control}}))
	keys := writeTargets{mirrored: make([]client.ObjectKey, observedConfigMaps), control: make([]client.ObjectKey, observedConfigMaps)}
	for i := range observedConfigMaps {
		keys.mirrored[i] = client.ObjectKey{Namespace: name, Name: fmt.Sprintf("cm-%02d", i)}
		keys.control[i] = client.ObjectKey{Namespace: control, Name: fmt.Sprintf("cm-%02d", i)}
		for _, key := range []client.ObjectKey{keys.mirrored[i], keys.control[i]} {
			require.NoError(b, e.client().Create(ctx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}, Data: map[string]string{"key-0": "initial"}}))
		}
	}

	var off, on []writeRun
	for round := range observedRounds {
		off = append(off, timeWrites(b, e, m, keys, fmt.Sprintf("%s-off-%d", name, round), false))
		on = append(on, timeWrites(b, e, m, keys, fmt.Sprintf("%s-on-%d", name, round), true))
	}
	reportObservedWrites(r, off, on)
}

// writeTargets are the ConfigMaps the timed writes go to: mirrored ones,
// and as many in a namespace no GitTarget mirrors.
type writeTargets struct {
	mirrored, control []client.ObjectKey
}

// timeWrites starts an operator run (with the observer when observed),
// waits until the observer reviews writes (or until none reaches it),
// and times observedWrites writes after observedWarmUp untimed ones.
func timeWrites(b *testing.B, e *benchEnv, m *mirror, keys writeTargets, run string, observed bool) writeRun {
	b.Helper()
	ctx := context.Background()
	write := func(ctx context.Context, i int, value string) error {
		return patchValue(ctx, e.client(), keys.mirrored[i%len(keys.mirrored)], value)
	}
	writeControl := func(ctx context.Context, i int, value string) error {
		return patchValue(ctx, e.client(), keys.control[i%len(keys.control)], value)
	}
	probes := 0
	probe := func(ctx context.Context) error {
		probes++
		return write(ctx, probes, fmt.Sprintf("probe-%d-of-%s", probes, run))
	}
	observedOp := startObservedRun(b, e, m, run, observed, probe)
	defer observedOp.stop(b, e)
	op := observedOp.op
	require.NoError(b, waitReady(ctx, e, m, op, time.Minute))
	observedOp.waitReviews(b, e, "configmaps")
	for i := range observedWarmUp {
		require.NoError(b, write(ctx, i, fmt.Sprintf("warm-%d-of-%s", i, run)))
		require.NoError(b, writeControl(ctx, i, fmt.Sprintf("warm-%d-of-%s", i, run)))
	}

	loadBefore, err := loadAverage()
	require.NoError(b, err)
	apiBefore, err := e.apiServerMetrics(ctx)
	require.NoError(b, err)
	opBefore, err := op.scrape(ctx)
	require.NoError(b, err)
	cpuBefore, err := op.usage()
	require.NoError(b, err)
	latencies := make([]time.Duration, 0, observedWrites)
	controls := make([]time.Duration, 0, observedWrites)
	for i := range observedWrites {
		value := fmt.Sprintf("write-%d-of-%s", i, run)
		start := time.Now()
		require.NoError(b, write(ctx, i, value))
		latencies = append(latencies, time.Since(start))
		start = time.Now()
		require.NoError(b, writeControl(ctx, i, value))
		controls = append(controls, time.Since(start))
	}
	cpuAfter, err := op.usage()
	require.NoError(b, err)
	opAfter, err := op.scrape(ctx)
	require.NoError(b, err)
	apiAfter, err := e.apiServerMetrics(ctx)
	require.NoError(b, err)
	loadAfter, err := loadAverage()
	require.NoError(b, err)

	secondsBefore, _ := observerCallSeconds(apiBefore)
	secondsAfter, _ := observerCallSeconds(apiAfter)
	w := writeRun{
		p50: percentile(latencies, 50), p99: percentile(latencies, 99),
		controlP50: percentile(controls, 50), controlP99: percentile(controls, 99),
		calls: observerCalls(apiAfter) - observerCalls(apiBefore), callSeconds: secondsAfter - secondsBefore,
		queued:      observerQueued(opAfter) - observerQueued(opBefore),
		operatorCPU: cpuAfter.CPUSeconds - cpuBefore.CPUSeconds,
		load:        max(loadBefore, loadAfter),
	}
	b.Logf("run %s: p50 %.2f ms, p99 %.2f ms, max %.2f ms (unmirrored: p50 %.2f ms, p99 %.2f ms); observer calls %.0f, facts %.0f; operator CPU %.2f s; load %.2f → %.2f",
		run, milliseconds(w.p50), milliseconds(w.p99), milliseconds(percentile(latencies, 100)),
		milliseconds(w.controlP50), milliseconds(w.controlP99), w.calls, w.queued,
		w.operatorCPU, loadBefore, loadAfter)
	return w
}

// reportObservedWrites records both sides' percentiles, what the observer
// adds (per round, on minus the off run just before it), and the figures
// load does not move: calls per write and the operator's CPU per write.
func reportObservedWrites(r reporter, off, on []writeRun) {
	r.b.Helper()
	var offP50, offP99, onP50, onP99, addedP50, addedP99, sameRunP50, sameRunP99, offSameRunP99, callMean, cpuAdded, calls, offCalls, loads []float64
	for i := range on {
		offP50 = append(offP50, milliseconds(off[i].p50))
		offP99 = append(offP99, milliseconds(off[i].p99))
		onP50 = append(onP50, milliseconds(on[i].p50))
		onP99 = append(onP99, milliseconds(on[i].p99))
		addedP50 = append(addedP50, milliseconds(on[i].p50-off[i].p50))
		addedP99 = append(addedP99, milliseconds(on[i].p99-off[i].p99))
		sameRunP50 = append(sameRunP50, milliseconds(on[i].p50-on[i].controlP50))
		sameRunP99 = append(sameRunP99, milliseconds(on[i].p99-on[i].controlP99))
		offSameRunP99 = append(offSameRunP99, milliseconds(off[i].p99-off[i].controlP99))
		if on[i].calls > 0 {
			callMean = append(callMean, on[i].callSeconds/on[i].calls*1000)
		}
		cpuAdded = append(cpuAdded, (on[i].operatorCPU-off[i].operatorCPU)/observedWrites*1e6)
		calls = append(calls, on[i].calls/observedWrites)
		offCalls = append(offCalls, off[i].calls)
		loads = append(loads, off[i].load, on[i].load)
	}
	r.reportSpread("observer off: write p50", offP50, "ms", 0)
	r.reportSpread("observer off: write p99", offP99, "ms", 0)
	r.reportSpread("observer on: write p50", onP50, "ms", 0)
	r.reportSpread("observer on: write p99", onP99, "ms", 0)
	r.reportSpread("added by the observer: p50", addedP50, "ms", 0)
	r.reportSpread("added by the observer: p99", addedP99, "ms", addedWriteP99Target)
	r.reportSpread("on run, mirrored minus unmirrored: p50", sameRunP50, "ms", 0)
	r.reportSpread("on run, mirrored minus unmirrored: p99", sameRunP99, "ms", addedWriteP99Target)
	r.reportSpread("off run, mirrored minus unmirrored: p99", offSameRunP99, "ms", 0)
	r.reportSpread("API server's call to the observer (mean)", callMean, "ms", 0)
	r.reportSpread("observer calls per write (on)", calls, "", 0)
	r.atMost("observer calls in the off runs", spreadOf(offCalls).max, "", 0)
	r.reportSpread("operator CPU per write, on minus off", cpuAdded, "µs", 0)
	r.info("load average (1 min), highest seen", spreadOf(loads).max, "")
	r.info("load average (1 min), lowest seen", spreadOf(loads).min, "")
}
