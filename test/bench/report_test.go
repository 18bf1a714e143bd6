package bench

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// The targets.
const (
	coldStartTarget  = 8 * time.Second
	burstTarget      = 15 * time.Second
	restartTarget    = 4 * time.Second
	peakRSSTargetMiB = 60
	// latencySlack is what the edit-to-commit p50 may take beyond the commit
	// window and one remote commit.
	latencySlack = 100 * time.Millisecond
)

// figure is one measured number and, when it has one, its target.
type figure struct {
	scenario, forge, what string
	value                 float64
	unit                  string
	// limit is the target's upper bound; hasLimit false means "for
	// information".
	limit    float64
	hasLimit bool
}

func (f figure) verdict() string {
	switch {
	case !f.hasLimit:
		return ""
	case f.value <= f.limit:
		return "met"
	}
	return "MISSED"
}

func (f figure) target() string {
	if !f.hasLimit {
		return "-"
	}
	return fmt.Sprintf("≤ %s %s", formatValue(f.limit), f.unit)
}

var (
	figuresMu sync.Mutex
	figures   []figure
)

// reporter records a scenario's figures for b.ReportMetric, the -v log and
// the summary table printed when the package ends.
type reporter struct {
	b        *testing.B
	scenario string
	forge    forgeKind
}

func newReporter(b *testing.B, scenario string, fk forgeKind) reporter {
	return reporter{b: b, scenario: scenario, forge: fk}
}

// info records a figure without a target.
func (r reporter) info(what string, value float64, unit string) {
	r.b.Helper()
	r.record(figure{scenario: r.scenario, forge: string(r.forge), what: what, value: value, unit: unit})
}

// atMost records a figure whose target is an upper bound.
func (r reporter) atMost(what string, value float64, unit string, limit float64) {
	r.b.Helper()
	r.record(figure{scenario: r.scenario, forge: string(r.forge), what: what, value: value, unit: unit, limit: limit, hasLimit: true})
}

// upTo is atMost with limit, or info when limit is zero.
func (r reporter) upTo(what string, value float64, unit string, limit float64) {
	r.b.Helper()
	if limit > 0 {
		r.atMost(what, value, unit, limit)
		return
	}
	r.info(what, value, unit)
}

func (r reporter) record(f figure) {
	r.b.Helper()
	// ReportMetric units may not hold spaces: "s" and "start to all" become
	// "s/start-to-all"; a count is named by what it counts.
	unit := metricName(f.what)
	if f.unit != "" {
		unit = f.unit + "/" + unit
	}
	r.b.ReportMetric(f.value, unit)
	r.b.Logf("%-44s %10s %-4s target %-12s %s", f.what, formatValue(f.value), f.unit, f.target(), f.verdict())
	figuresMu.Lock()
	figures = append(figures, f)
	figuresMu.Unlock()
}

// usage records the operator's CPU seconds and peak RSS against the
// resource targets.
func (r reporter) usage(u usage) {
	r.b.Helper()
	r.info("operator CPU", u.CPUSeconds, "s")
	r.atMost("operator peak RSS", u.PeakRSSMiB, "MiB", peakRSSTargetMiB)
	r.b.Logf("%-34s %10s MiB anonymous, %s MiB file-backed", "operator RSS now", formatValue(u.AnonRSSMiB), formatValue(u.FileRSSMiB))
}

func metricName(what string) string {
	out := []rune{}
	for _, c := range what {
		switch {
		case c == ' ' || c == '/':
			out = append(out, '-')
		case c == '(' || c == ')' || c == ',' || c == ':':
		default:
			out = append(out, c)
		}
	}
	return string(out)
}

func formatValue(v float64) string {
	switch {
	case v == math.Trunc(v) && math.Abs(v) < 1e6:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 100:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

// printSummary writes every recorded figure as one table, in the order the
// scenarios ran.
func printSummary(w io.Writer) {
	figuresMu.Lock()
	defer figuresMu.Unlock()
	if len(figures) == 0 {
		return
	}
	fmt.Fprintf(w, "\n== gitops-reverser benchmark summary (%s) ==\n", time.Now().Format(time.RFC3339))
	fmt.Fprintf(w, "%-26s %-7s %-44s %10s %-4s %-14s %s\n", "scenario", "forge", "figure", "value", "", "target", "")
	for _, f := range figures {
		fmt.Fprintf(w, "%-26s %-7s %-44s %10s %-4s %-14s %s\n", f.scenario, f.forge, f.what, formatValue(f.value), f.unit, f.target(), f.verdict())
	}
	printForgeMatrix(w)
}

// matrixForges are the summary's columns: every forge, and the smart-HTTP
// push to Gitea that scenario F measures the Gitea forge against.
var matrixForges = append(allForges[:len(allForges):len(allForges)], forgeGiteaPush)

// printForgeMatrix prints every figure once, with one column per forge,
// in the order the figures first appeared; a missed target is marked "!".
func printForgeMatrix(w io.Writer) {
	type row struct{ scenario, what, unit string }
	var rows []row
	cells := map[row]map[string]string{}
	for _, f := range figures {
		key := row{f.scenario, f.what, f.unit}
		if cells[key] == nil {
			cells[key] = map[string]string{}
			rows = append(rows, key)
		}
		mark := ""
		if f.verdict() == "MISSED" {
			mark = "!"
		}
		cells[key][f.forge] = formatValue(f.value) + mark
	}
	fmt.Fprintf(w, "\n== by forge (! = target missed) ==\n%-26s %-58s", "scenario", "figure")
	for _, fk := range matrixForges {
		fmt.Fprintf(w, " %10s", fk)
	}
	fmt.Fprintln(w)
	for _, key := range rows {
		fmt.Fprintf(w, "%-26s %-58s", key.scenario, strings.TrimSpace(key.what+" "+key.unit))
		for _, fk := range matrixForges {
			fmt.Fprintf(w, " %10s", cells[key][string(fk)])
		}
		fmt.Fprintln(w)
	}
}

// seconds converts a duration for reporting.
func seconds(d time.Duration) float64 { return d.Seconds() }

// milliseconds converts a duration for reporting, fractions kept.
func milliseconds(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// percentile is the nearest-rank percentile p (0..100) of samples.
func percentile(samples []time.Duration, p float64) time.Duration {
	if len(samples) == 0 {
		return 0
	}
	sorted := append([]time.Duration(nil), samples...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	rank := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[max(rank, 0)]
}
