package bench

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"k8s.io/client-go/rest"
)

// apiServerConfigMapBytes is what the API server has sent of ConfigMaps
// so far, from its own metrics: watch event bytes (a sendInitialEvents
// replay is all watch events) plus LIST response bytes. The difference
// over an operator run is what that run read of the mirrored objects.
func (e *benchEnv) apiServerConfigMapBytes(ctx context.Context) (float64, error) {
	s, err := e.apiServerMetrics(ctx)
	if err != nil {
		return 0, err
	}
	watched := s.sum("apiserver_watch_events_sizes_sum", `resource="configmaps"`) + s.sum("apiserver_watch_events_sizes_sum", `kind="ConfigMap"`)
	listed := s.sum("apiserver_response_sizes_sum", `resource="configmaps"`, `verb="LIST"`)
	return watched + listed, nil
}

// apiServerMetrics scrapes the API server's own metrics.
func (e *benchEnv) apiServerMetrics(ctx context.Context) (metricSamples, error) {
	cfg := e.kube.Config()
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the API server metrics client: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(cfg.Host, "/")+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scraping the API server's metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scraping the API server's metrics: %s", resp.Status)
	}
	return parseMetrics(resp.Body)
}
