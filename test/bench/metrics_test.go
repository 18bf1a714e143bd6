package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// scrape reads the operator's metrics endpoint.
func (o *operatorRun) scrape(ctx context.Context) (metricSamples, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, o.metricsURL, nil)
	if err != nil {
		return nil, fmt.Errorf("building the metrics request: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scraping the operator's metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scraping the operator's metrics: %s", resp.Status)
	}
	return parseMetrics(resp.Body)
}

// metricSample is one line of the Prometheus text format.
type metricSample struct {
	name, labels string
	value        float64
}

type metricSamples []metricSample

// parseMetrics reads the Prometheus text format as client_golang writes it
// (no timestamps): enough to sum counters and histogram _sum/_count.
func parseMetrics(r io.Reader) (metricSamples, error) {
	var out metricSamples
	scanner := bufio.NewScanner(r)
	scanner.Buffer(make([]byte, 64<<10), 1<<20)
	for scanner.Scan() {
		line := scanner.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cut := strings.LastIndexByte(line, ' ')
		if cut < 0 {
			continue
		}
		value, err := strconv.ParseFloat(line[cut+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("parsing metric line %q: %w", line, err)
		}
		series := line[:cut]
		name, labels := series, ""
		if i := strings.IndexByte(series, '{'); i >= 0 {
			name, labels = series[:i], series[i:]
		}
		out = append(out, metricSample{name: name, labels: labels, value: value})
	}
	if err := scanner.Err(); err != nil {
		return nil, fmt.Errorf("reading the metrics: %w", err)
	}
	return out, nil
}

// sum adds every sample of name whose labels contain all of matchers
// (written as they appear, e.g. `type="MODIFIED"`).
func (s metricSamples) sum(name string, matchers ...string) float64 {
	var total float64
	for _, m := range s {
		if m.name != name || !containsAll(m.labels, matchers) {
			continue
		}
		total += m.value
	}
	return total
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
