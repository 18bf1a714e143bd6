// Package operator wires the manager, the mirroring engine and the
// controllers; cmd/gitops-reverser and the end-to-end tests both start the
// operator through Run.
package operator

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/configbutler/gitops-reverser/internal/admission"
	"github.com/configbutler/gitops-reverser/internal/controller"
	"github.com/configbutler/gitops-reverser/internal/discovery"
	"github.com/configbutler/gitops-reverser/internal/engine"
	"github.com/configbutler/gitops-reverser/internal/forgeconn"
	"github.com/configbutler/gitops-reverser/internal/kubecache"
	"github.com/configbutler/gitops-reverser/internal/kubescheme"
	"github.com/configbutler/gitops-reverser/internal/metrics"
	"github.com/configbutler/gitops-reverser/internal/redisconn"
	"github.com/configbutler/gitops-reverser/internal/redisstore"
	"github.com/configbutler/gitops-reverser/internal/rules"
)

// Options are the operator's settings.
type Options struct {
	Config      *rest.Config
	MetricsAddr string
	ProbeAddr   string
	// PprofAddr serves Go's /debug/pprof profiles; "" or "0" serves none,
	// the default: the endpoint has no authentication, and a CPU profile
	// or a trace asked of it costs the process while it runs, so it is
	// for a port-forward while investigating, not a Service.
	PprofAddr   string
	LeaderElect bool
	// Replicas is how many replicas run; more than one share the branches
	// (internal/ha) and need Redis and a ReplicaIdentity each.
	Replicas int
	// ReplicaIdentity is this replica's name among them (the pod name).
	ReplicaIdentity         string
	LeaderElectionNamespace string
	// OperatorNamespace holds remote kubeconfig Secrets and the leader Lease.
	OperatorNamespace string
	// CredentialNamespaces, when set, are the only namespaces (besides
	// OperatorNamespace) whose Secrets the operator reads and watches: the
	// namespaces of the GitProviders and GitTargets. Empty is every
	// namespace, which needs Secret read access cluster-wide.
	CredentialNamespaces []string
	// BufferMax closes a commit window once it holds this many bytes.
	BufferMax           int
	AdditionalSensitive []schema.GroupResource
	// TargetResync is how often a healthy GitTarget is checked again.
	TargetResync time.Duration
	// Registry receives the metrics; nil is controller-runtime's registry.
	Registry prometheus.Registerer
	// PermissionWait is how long a missing permission is asked again at
	// start before the operator gives up; 30s when zero.
	PermissionWait time.Duration
	// SkipNameValidation lets one process start the operator more than once
	// (tests that restart it).
	SkipNameValidation bool
	// RecoverPanic turns a panicking reconcile into a logged error, as a
	// running operator should. It is off unless set, so a panic in a test
	// that starts the operator crashes the test binary and fails the run.
	RecoverPanic bool
	// ProviderBudgetRefresh is how long after a commit a metered
	// GitProvider refreshes status.rateLimit; 15s when zero.
	ProviderBudgetRefresh time.Duration
	// APIServerBackoff spaces the attempts to reach an API server that does
	// not answer at start; the zero value is 1s doubling to 30s, jittered.
	APIServerBackoff wait.Backoff
	// Attribution, when set, names the Kubernetes actor of each live change
	// as its commit's author; nil is configured-author mode.
	Attribution *AttributionOptions
	// Redis, when set, is where watch resume cursors (and, with the redis
	// transport, attribution facts) are kept. Its outages are logged and
	// counted, never a reason to be unready (redis.go). Nil runs without
	// Redis: watches cold-replay on restart.
	Redis *redisconn.Options
	// Admission, when set, serves the webhook that names CommitRequest
	// submitters; nil leaves every CommitRequest without one.
	Admission *AdmissionOptions
	// CommitRequestRetention keeps a finished CommitRequest this long
	// before deleting it; 24h when zero.
	CommitRequestRetention time.Duration
}

// Run starts the operator and blocks until ctx ends. It first waits for
// the API server to answer (alive but not ready meanwhile), then checks
// that its identity has the permissions it cannot work without, and fails
// naming each missing one.
func Run(ctx context.Context, o Options) error {
	if err := checkOptions(&o); err != nil {
		return err
	}
	if ready, err := waitUntilStartable(ctx, o); !ready {
		return err
	}
	scheme, err := kubescheme.New()
	if err != nil {
		return err
	}
	webhooks, err := newAdmission(o.Config, o.Admission, scheme)
	if err != nil {
		return err
	}
	mgrOpts := managerOptions(o, scheme)
	if webhooks != nil {
		mgrOpts.WebhookServer = webhooks.server
	}
	mgr, err := ctrl.NewManager(o.Config, mgrOpts)
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	reg := o.Registry
	if reg == nil {
		reg = ctrlmetrics.Registry
	}
	m, fm := metrics.New(), metrics.NewForgeMetrics()
	if err := m.Register(reg); err != nil {
		return fmt.Errorf("registering metrics: %w", err)
	}
	if err := fm.Register(reg); err != nil {
		return fmt.Errorf("registering forge metrics: %w", err)
	}
	certs := metrics.NewCertificateMetrics()
	if err := certs.Register(reg); err != nil {
		return fmt.Errorf("registering certificate metrics: %w", err)
	}
	redis, err := setupRedis(mgr, o, reg)
	if err != nil {
		return err
	}
	if redis != nil {
		defer redis.client.Close()
	}
	pipeline, err := setupAttribution(mgr, o.Attribution, redis, reg, certs, o.RecoverPanic)
	if err != nil {
		return err
	}
	replicas, err := setupHA(ctx, mgr, o, redis, reg)
	if err != nil {
		return ifNotEnded(ctx, err) // a stop while it waited for the API server is a clean one
	}
	fw := newForgeWiring(fm)
	engineOpts := engine.Options{
		LocalConfig: o.Config, Policy: discovery.Policy{AdditionalSensitive: o.AdditionalSensitive},
		BufferMax: o.BufferMax, Log: ctrl.Log.WithName("engine"), Metrics: m, Attribution: pipeline.engineAttribution(),
		Builders: engine.Builders{Secrets: mgr.GetAPIReader(), ForgeTransport: fw.transport, Pacers: fw.pacers},
	}
	if redis != nil {
		engineOpts.Cursors = &redisstore.Cursors{Client: redis.client, Prefix: o.Redis.Prefix()}
		engineOpts.CursorObserver = redis.observer
		webhooks.share(&redisstore.Submitters{Client: redis.client, Prefix: o.Redis.Prefix()}, redis.observer)
	}
	replicas.configure(&engineOpts)
	var eng *engine.Engine
	observed, err := setupObserver(mgr, o, pipeline, reg, func() []rules.Claim { return eng.LocalClaims() })
	if err != nil {
		return err
	}
	engineOpts.ClaimsChanged = observed.changed()
	eng = engine.New(engineOpts)
	replicas.bind(eng)
	if err := mgr.Add(eng); err != nil {
		return fmt.Errorf("adding the engine: %w", err)
	}
	if err := webhooks.start(ctx, mgr, reg, certs, o.RecoverPanic); err != nil {
		return err
	}
	if err := setupControllers(mgr, eng, fm, fw, o, webhooks.lookup()); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("adding the health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return fmt.Errorf("adding the readiness check: %w", err)
	}
	return mgr.Start(ctx)
}

// managerOptions configure the controller-runtime manager: leader election,
// probes, metrics, and caches that hold no Secret value.
func managerOptions(o Options, scheme *runtime.Scheme) ctrl.Options {
	return ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsserver.Options{BindAddress: o.MetricsAddr},
		HealthProbeBindAddress:  o.ProbeAddr,
		PprofBindAddress:        o.PprofAddr,
		LeaderElection:          o.LeaderElect,
		LeaderElectionID:        "gitops-reverser.configbutler.ai",
		LeaderElectionNamespace: orDefault(o.LeaderElectionNamespace, o.OperatorNamespace),
		// A stopping replica hands the lease over at once instead of making
		// the next one wait for it to expire; the engine has committed what
		// it held by then.
		LeaderElectionReleaseOnCancel: true,
		Controller:                    config.Controller{SkipNameValidation: &o.SkipNameValidation, RecoverPanic: &o.RecoverPanic},
		// The informers keep metadata of Secrets and ConfigMaps (of the
		// credential namespaces), to notice a credential fix; managed
		// fields are most of that and never read. Secret values are never
		// cached: they are read with the APIReader when needed.
		// controller-runtime's cache with sync waits that wake on done
		// channels instead of polling (about 0.3 s of every start).
		NewCache: kubecache.New,
		Cache: cache.Options{DefaultTransform: cache.TransformStripManagedFields(),
			ByObject: credentialCache(credentialNamespaces(o))},
		Client: uncachedSecrets(),
	}
}

// checkOptions refuses what the flags got wrong before anything waits on
// the API server: a bad --redis-addr must not hide behind an API server
// that does not answer yet. It settles the attribution transport, which
// depends on whether Redis is configured.
func checkOptions(o *Options) error {
	if o.Attribution != nil {
		a := *o.Attribution
		a.resolveTransport(o.Redis != nil)
		if err := a.check(o.Redis != nil); err != nil {
			return fmt.Errorf("author attribution: %w", err)
		}
		if a.admission() && o.Admission == nil {
			return errors.New("author attribution: the admission observer is served by the operator's webhook server: " +
				"--author-attribution-source=" + a.Source + " needs --admission-webhook-port")
		}
		o.Attribution = &a
	}
	if o.Admission != nil {
		if err := o.Admission.check(); err != nil {
			return fmt.Errorf("admission webhook: %w", err)
		}
	}
	if o.Redis != nil {
		if _, err := o.Redis.ClientOptions(); err != nil {
			return fmt.Errorf("redis: %w", err)
		}
	}
	return checkHA(o)
}

// waitUntilStartable waits for the API server and checks access while
// serving the probes itself, so a Pod waiting out an API server outage is
// alive and not ready. ready is false when the operator must not start: err
// says why, nil when ctx ended.
func waitUntilStartable(ctx context.Context, o Options) (ready bool, err error) {
	probes, err := startStartupProbes(o.ProbeAddr)
	if err != nil {
		return false, err
	}
	defer probes.stop() // the manager takes the address over
	if err := waitForAPIServer(ctx, o.Config, o.apiServerBackoff(), probes, ctrl.Log.WithName("startup")); err != nil {
		return false, ifNotEnded(ctx, err)
	}
	probes.setWaiting("checking the operator's permissions")
	permissionWait := o.PermissionWait
	if permissionWait <= 0 {
		permissionWait = 30 * time.Second
	}
	if err := checkAccess(ctx, o.Config, requiredAccess(o), permissionWait); err != nil {
		return false, ifNotEnded(ctx, err)
	}
	return ctx.Err() == nil, nil
}

// ifNotEnded is err, or nil once ctx has ended: a stop asked for while
// starting is a clean stop.
func ifNotEnded(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// forgeWiring is what every forge client is opened with, by the engine's
// workers and the GitProvider controller's probes alike.
type forgeWiring struct {
	// transport is asked once per forge client opened.
	transport func(forge string, count *atomic.Int64) http.RoundTripper
	// pacers is one set: the GitProviders' probes count what the
	// GitTargets' workers send against GitHub's secondary limits, and
	// report it.
	pacers *forgeconn.Pacers
}

func newForgeWiring(fm *metrics.ForgeMetrics) forgeWiring {
	return forgeWiring{
		transport: func(forge string, count *atomic.Int64) http.RoundTripper {
			fm.Opened(forge)
			return fm.Transport(forge, nil, count)
		},
		pacers: &forgeconn.Pacers{},
	}
}

func setupControllers(mgr ctrl.Manager, eng *engine.Engine, fm *metrics.ForgeMetrics, fw forgeWiring, o Options, submitters admission.SubmitterLookup) error {
	c, secrets := mgr.GetClient(), mgr.GetAPIReader()
	forgeTransport, pacers := fw.transport, fw.pacers
	recorder := mgr.GetEventRecorder("gitops-reverser")
	reconcilers := []struct {
		name  string
		setup interface{ SetupWithManager(ctrl.Manager) error }
	}{
		{"GitProvider", &controller.GitProviderReconciler{Client: c, SecretReader: secrets, Budgets: fm, ForgeTransport: forgeTransport,
			Pacers: pacers, BudgetRefreshDelay: o.ProviderBudgetRefresh, CredentialNamespaces: credentialNamespaces(o), Events: recorder}},
		{"GitTarget", &controller.GitTargetReconciler{Client: c, SecretReader: secrets, Metadata: mgr.GetCache(), CredentialNamespaces: credentialNamespaces(o),
			Engine: eng, LocalConfig: o.Config, EveryReplica: o.Replicas > 1,
			NoteClaimsElsewhere: o.Replicas > 1 && o.Attribution != nil && o.Attribution.admission(),
			OperatorNamespace:   o.OperatorNamespace, ResyncInterval: o.TargetResync, Events: recorder}},
		{"ClusterProvider", &controller.ClusterProviderReconciler{Client: c, SecretReader: secrets, LocalConfig: o.Config,
			OperatorNamespace: o.OperatorNamespace, Events: recorder}},
		{"WatchRule", &controller.RuleReconciler{Client: c, Engine: eng}},
		{"ClusterWatchRule", &controller.RuleReconciler{Client: c, Engine: eng, Cluster: true}},
		{"CommitRequest", &controller.CommitRequestReconciler{Client: c, TargetReader: mgr.GetAPIReader(), Engine: eng, Submitters: submitters,
			EveryReplica: o.Replicas > 1,
			Retention:    o.CommitRequestRetention}},
	}
	for _, r := range reconcilers {
		if err := r.setup.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("setting up the %s controller: %w", r.name, err)
		}
	}
	return nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
