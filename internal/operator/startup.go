package operator

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/retry"
)

// defaultAPIServerBackoff spaces the start-up attempts to reach the API
// server: 1 s doubling to 30 s, each with up to half again of jitter so a
// fleet of replicas restarted together does not knock in step.
var defaultAPIServerBackoff = retry.Exponential(time.Second, 30*time.Second)

// apiServerBackoff is Options.APIServerBackoff, or the default.
func (o Options) apiServerBackoff() wait.Backoff {
	if o.APIServerBackoff.Duration <= 0 {
		return defaultAPIServerBackoff
	}
	return o.APIServerBackoff
}

// apiServerAttemptTimeout bounds one attempt, so an address that drops
// packets is retried like one that refuses connections.
const apiServerAttemptTimeout = 10 * time.Second

// startupProbes serves /healthz and /readyz until the manager takes the
// address over: the process is alive (a liveness probe passes) but not ready
// (a readiness probe fails, naming what the operator waits for).
type startupProbes struct {
	server  *http.Server
	done    chan struct{}
	waiting atomic.Pointer[string]
}

// startStartupProbes listens on addr; "" and "0" serve nothing, as for the
// manager.
func startStartupProbes(addr string) (*startupProbes, error) {
	p := &startupProbes{done: make(chan struct{})}
	p.setWaiting("starting")
	if addr == "" || addr == "0" {
		close(p.done)
		return p, nil
	}
	listener, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening for health probes on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	alive := func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }
	notReady := func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "not ready: "+*p.waiting.Load(), http.StatusServiceUnavailable)
	}
	mux.HandleFunc("/healthz", alive)
	mux.HandleFunc("/healthz/", alive)
	mux.HandleFunc("/readyz", notReady)
	mux.HandleFunc("/readyz/", notReady)
	p.server = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		defer close(p.done)
		_ = p.server.Serve(listener)
	}()
	return p, nil
}

func (p *startupProbes) setWaiting(what string) { p.waiting.Store(&what) }

// stop frees the address for the manager's probe server.
func (p *startupProbes) stop() {
	if p.server != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := p.server.Shutdown(ctx); err != nil {
			_ = p.server.Close()
		}
	}
	<-p.done
}

// waitForAPIServer returns once the API server answers discovery and serves
// the operator's own kinds (what the manager's caches and field indexers
// need first), retrying with backoff while it cannot be reached, answers
// that it is not serving yet, or does not serve configbutler.ai yet: an API
// server that is down at start, or that has not yet served the CRDs after
// its own restart or an install that applies them next, is a state to wait
// out, not a reason to exit. Any other answer (401, 403) is left to the
// steps after it to report. When ctx ends first it returns ctx's error.
func waitForAPIServer(ctx context.Context, cfg *rest.Config, backoff wait.Backoff, probes *startupProbes, log logr.Logger) error {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = apiServerAttemptTimeout
	client, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("building a discovery client: %w", err)
	}
	for {
		waiting, err := startBlocker(client, cfg.Host)
		if waiting == "" {
			return nil
		}
		delay := backoff.Step()
		probes.setWaiting(waiting)
		log.Info("not starting yet; retrying", "waitingFor", waiting, "in", delay.Round(time.Millisecond).String(), "error", err.Error())
		if !retry.Sleep(ctx, clock.RealClock{}, delay) {
			return ctx.Err()
		}
	}
}

// startBlocker names what the operator still waits for before it can
// start ("" for nothing), with the error that says so.
func startBlocker(client discovery.DiscoveryInterface, host string) (string, error) {
	// One request tells both apart: no answer (or 5xx, 429) is an API
	// server that is not there yet, 404 one that does not serve our kinds.
	gv := v1alpha3.GroupVersion.String()
	_, err := client.ServerResourcesForGroupVersion(gv)
	switch {
	case apierrors.IsNotFound(err):
		return "waiting for the API server to serve " + gv + " (are the chart's CRDs installed?)", err
	case apiServerUnavailable(err):
		return "waiting for the API server at " + host + ": " + err.Error(), err
	}
	return "", nil
}

// untilAnswered makes call until the API server answers it, waiting out
// with backoff what noAnswerYet says is no answer yet, as the start does
// (waitForAPIServer): a 503 or a dropped connection just after the API
// server answered discovery is no reason to exit. Each attempt has
// apiServerAttemptTimeout. It returns the answer (nil, or any other
// error), or the last error once ctx ends.
func untilAnswered(ctx context.Context, backoff wait.Backoff, log logr.Logger, what string, call func(context.Context) error) error {
	for {
		attempt, cancel := context.WithTimeout(ctx, apiServerAttemptTimeout)
		err := call(attempt)
		cancel()
		if !noAnswerYet(err) {
			return err
		}
		delay := backoff.Step()
		log.Info("the API server does not answer yet; retrying", "waitingFor", what,
			"in", delay.Round(time.Millisecond).String(), "error", err.Error())
		if !retry.Sleep(ctx, clock.RealClock{}, delay) {
			return err
		}
	}
}

// noAnswerYet: err is one apiServerUnavailable waits out, and it came from
// the API server or the way to it (a Status, or a request that did not
// complete), not from this side, such as a kind the scheme lacks.
func noAnswerYet(err error) bool {
	var incomplete *url.Error
	return apiServerUnavailable(err) && (errors.As(err, new(apierrors.APIStatus)) || errors.As(err, &incomplete))
}

// apiServerUnavailable: err says the API server could not be reached, or
// that it is not serving yet (starting, overloaded).
func apiServerUnavailable(err error) bool {
	if err == nil {
		return false
	}
	if !errors.As(err, new(apierrors.APIStatus)) {
		return true // no answer at all: refused, reset, timed out, DNS
	}
	return apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err)
}
