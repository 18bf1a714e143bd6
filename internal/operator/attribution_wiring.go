package operator

import (
	"context"
	"crypto/x509"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/attribution"
	"github.com/configbutler/gitops-reverser/internal/audit"
	"github.com/configbutler/gitops-reverser/internal/engine"
	"github.com/configbutler/gitops-reverser/internal/facts"
	"github.com/configbutler/gitops-reverser/internal/facts/fallback"
	"github.com/configbutler/gitops-reverser/internal/facts/memory"
	factsredis "github.com/configbutler/gitops-reverser/internal/facts/redis"
	"github.com/configbutler/gitops-reverser/internal/metrics"
)

// setupAttribution adds the audit ingress and the watch side of
// attribution to the manager; nil (configured-author mode) when a is nil.
// redis is nil without --redis-addr; certs is told the ingress's
// certificates; recoverPanic is Options.RecoverPanic, for the ingress
// (guardPanics).
func setupAttribution(mgr ctrl.Manager, a *AttributionOptions, redis *redisSetup, reg prometheus.Registerer,
	certs *metrics.CertificateMetrics, recoverPanic bool) (*attributionPipeline, error) {
	if a == nil {
		return nil, nil
	}
	observer := metrics.NewAttributionMetrics()
	if err := observer.Register(reg); err != nil {
		return nil, fmt.Errorf("registering attribution metrics: %w", err)
	}
	index := &attribution.Index{TTL: a.factTTL(), Observer: observer}
	transport, err := newFactTransport(a, redis, index, observer)
	if err != nil {
		return nil, err
	}
	if a.audit() {
		if err := setupAuditIngress(mgr, a, transport, reg, certs, recoverPanic); err != nil {
			return nil, err
		}
	}
	pipeline := newAttributionPipeline(a, transport, index, observer)
	if a.Transport == TransportRedis {
		// Once Redis answers again the facts published there reach this
		// index only through the follows: start them at once, not after
		// what is left of their backoff.
		redis.monitor.Recovered = append(redis.monitor.Recovered, pipeline.follower.Retry)
	}
	if err := mgr.Add(pipeline); err != nil {
		return nil, fmt.Errorf("adding the attribution pipeline: %w", err)
	}
	return pipeline, nil
}

// newFactTransport builds the transport --author-attribution-transport
// names (check has refused the others). Redis Streams keep one fact TTL,
// which a restarted process replays into its index; while Redis refuses a
// publish, the facts go to this process's index directly and are held to
// be published when it is back (fallback), so a Redis outage costs the
// authors of this replica's own changes nothing.
func newFactTransport(a *AttributionOptions, redis *redisSetup, index *attribution.Index,
	observer *metrics.AttributionMetrics) (facts.Transport, error) {
	if a.Transport != TransportRedis {
		return memory.New(memory.Options{Retention: a.factTTL()}), nil
	}
	clientOpts, err := redis.clientOptions()
	if err != nil {
		return nil, err
	}
	shared := factsredis.New(clientOpts, factsredis.Options{Prefix: redis.prefix, Retention: a.factTTL(),
		DecodeError: observer.DecodeError})
	transport, err := fallback.New(fallback.Options{Shared: shared, Local: index.Apply, Retention: a.factTTL(),
		Failed: func(error) { redis.monitor.Check() }, Observer: observer, Log: ctrl.Log.WithName("attribution")})
	if err != nil {
		return nil, fmt.Errorf("building the fact transport: %w", err)
	}
	redis.monitor.Recovered = append(redis.monitor.Recovered, transport.Retry)
	return transport, nil
}

// setupAuditIngress adds the audit ingress to the manager: the HTTPS
// server (on every replica, not leader-elected), its serving certificate
// reloaded from its files, its readiness check, and its metrics (the
// expiry of the serving certificate, the client CA and the client
// certificate kube-apiserver presents among them).
func setupAuditIngress(mgr ctrl.Manager, a *AttributionOptions, transport facts.Transport, reg prometheus.Registerer,
	certs *metrics.CertificateMetrics, recoverPanic bool) error {
	watcher, err := certwatcher.New(a.CertFile, a.KeyFile)
	if err != nil {
		return fmt.Errorf("loading the audit ingress certificate: %w", err)
	}
	if err := mgr.Add(watcher); err != nil {
		return fmt.Errorf("adding the audit certificate watcher: %w", err)
	}
	certs.Watch(metrics.CertAuditServing, metrics.ServedBy(watcher.GetCertificate))
	var clientCAs *x509.CertPool
	if !a.Insecure {
		var cas []*x509.Certificate
		if clientCAs, cas, err = audit.LoadClientCAs(a.ClientCAFile); err != nil {
			return err
		}
		// Read once, as the pool is: a changed file needs a restart.
		certs.Watch(metrics.CertAuditClientCA, metrics.EarliestExpiry(cas))
	}
	observer := metrics.NewAuditMetrics()
	if err := observer.Register(reg); err != nil {
		return fmt.Errorf("registering audit metrics: %w", err)
	}
	handler, err := audit.NewHandler(audit.HandlerOptions{
		Transport: transport, KnownRoute: knownRoutes(mgr.GetClient()), RouteAnnotationKey: a.RouteAnnotationKey,
		MaxBodyBytes: a.maxBodyBytes(), Observer: observer,
	})
	if err != nil {
		return fmt.Errorf("building the audit handler: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle(audit.PathPrefix, handler)
	mux.Handle(audit.PathPrefix+"/", handler)
	server := &audit.Server{Addr: a.ListenAddr, Handler: guardPanics("audit-ingress", mux, recoverPanic), GetCertificate: watcher.GetCertificate, ClientCAs: clientCAs,
		Insecure: a.Insecure, ClientCertificate: func(c *x509.Certificate) { certs.Presented(metrics.CertAuditClient, c) }}
	if err := mgr.Add(server); err != nil {
		return fmt.Errorf("adding the audit ingress: %w", err)
	}
	if err := mgr.AddReadyzCheck("audit-ingress", server.Ready); err != nil {
		return fmt.Errorf("adding the audit ingress readiness check: %w", err)
	}
	return nil
}

// knownRouteTimeout bounds the ClusterProvider read of one audit request.
const knownRouteTimeout = 5 * time.Second

// knownRoutes reports whether some ClusterProvider carries a route, from
// the manager's cache.
func knownRoutes(c client.Reader) func(string) bool {
	return func(route string) bool {
		ctx, cancel := context.WithTimeout(context.Background(), knownRouteTimeout)
		defer cancel()
		var providers v1alpha3.ClusterProviderList
		if err := c.List(ctx, &providers); err != nil {
			return false
		}
		for i := range providers.Items {
			if providers.Items[i].AuditRoute() == route {
				return true
			}
		}
		return false
	}
}

// indexSweepInterval is how often the fact index drops expired facts (it
// also checks expiry on every read).
const indexSweepInterval = 30 * time.Second

// attributionPipeline is the watch side of attribution: the fact index,
// the follower that fills it from the transport, and the resolver the
// target streams ask.
type attributionPipeline struct {
	transport facts.Transport
	index     *attribution.Index
	follower  *attribution.Follower
	resolver  *attribution.Resolver
}

// newAttributionPipeline builds the follower and resolver over transport
// and index, reporting to observer.
func newAttributionPipeline(a *AttributionOptions, transport facts.Transport, index *attribution.Index,
	observer *metrics.AttributionMetrics) *attributionPipeline {
	return &attributionPipeline{
		index:     index,
		transport: transport,
		follower:  &attribution.Follower{Transport: transport, TransportName: a.Transport, Index: index, Observer: observer},
		// With the observer as the only source, a confirmed review answers
		// without waiting the whole grace: no audit fact will come to win
		// over it (settleFor says how soon).
		resolver: &attribution.Resolver{Index: index, Grace: a.grace(), Observer: observer,
			AdmissionOnly: a.Source == SourceAdmission, Settle: settleFor(a), Barrier: settleBarrier(a, transport)},
	}
}

// factTransport is where facts are published; nil when attribution is off.
func (p *attributionPipeline) factTransport() facts.Transport {
	if p == nil {
		return nil
	}
	return p.transport
}

// engineAttribution is what the engine hands each target's streams.
func (p *attributionPipeline) engineAttribution() *engine.Attribution {
	if p == nil {
		return nil
	}
	return &engine.Attribution{Resolver: p.resolver, Follow: p.follower.Ensure}
}

// Start sweeps the index until ctx ends, then stops the follower (a
// manager Runnable on every replica: the streams' facts must reach the
// index wherever the watches run).
func (p *attributionPipeline) Start(ctx context.Context) error {
	done := p.index.StartSweeping(ctx, indexSweepInterval)
	<-ctx.Done()
	p.follower.Stop()
	<-done
	if closer, ok := p.transport.(interface{ Close() error }); ok {
		_ = closer.Close() // the process is stopping; nothing to report to
	}
	return nil
}

// NeedLeaderElection is false: see Start.
func (p *attributionPipeline) NeedLeaderElection() bool { return false }

// settleFor is the resolver's Settle. With the memory transport no other
// process's review can reach this index, and this process's observer files
// each of its reviews here before the write it reviews is stored, so a
// confirmed review answers at once: waiting would change nothing. With
// Redis another process may have answered a review of the same write (the
// other Pod of a rolling update, behind the same Service): the event waits
// until this process has followed every review published before it
// (settleBarrier), the default settle at most.
func settleFor(a *AttributionOptions) time.Duration {
	if a.Transport == TransportMemory {
		return attribution.NoSettle
	}
	return 0
}

// settleBarrier is the resolver's Barrier: the transport's, when the
// observer is the only source and other processes publish to it.
func settleBarrier(a *AttributionOptions, transport facts.Transport) func(context.Context, facts.StreamKey) error {
	barrier, ok := transport.(facts.Barrier)
	if !ok || a.Source != SourceAdmission || a.Transport == TransportMemory {
		return nil
	}
	return barrier.AwaitDelivered
}
