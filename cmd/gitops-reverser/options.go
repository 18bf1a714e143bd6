package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/configbutler/gitops-reverser/internal/operator"
	"github.com/configbutler/gitops-reverser/internal/redisconn"
)

// flags are the command line, turned into operator.Options by options().
type flags struct {
	metricsAddr, probeAddr, pprofAddr, leaderElectionNS, operatorNamespace string
	leaderElect                                                            bool
	branchBufferMaxSize, additionalSensitive                               string
	credentialNamespaces, replicaIdentity                                  string
	targetResync                                                           time.Duration
	attribution                                                            attributionFlags
	redis                                                                  redisFlags
	admission                                                              admissionFlags
	commitRequestRetention                                                 time.Duration
}

// redisFlags say where Redis is; an empty address runs without it.
type redisFlags struct {
	addr, username, passwordFile, caFile, keyPrefix string
}

func (r *redisFlags) bind(fs *flag.FlagSet) {
	fs.StringVar(&r.addr, "redis-addr", r.addr,
		"Redis or Valkey (standalone): redis://[user:password@]host:port[/db], rediss://... for TLS, or host:port. Empty runs without Redis (watches cold-replay on restart).")
	fs.StringVar(&r.username, "redis-username", r.username, "Redis ACL user (overrides one in --redis-addr).")
	fs.StringVar(&r.passwordFile, "redis-password-file", r.passwordFile,
		"File holding the Redis password (a mounted Secret; read again on every new connection). $REDIS_PASSWORD is used when unset.")
	fs.StringVar(&r.caFile, "redis-ca-file", r.caFile, "CA bundle (PEM) a rediss:// server's certificate is checked against; system roots when empty.")
	fs.StringVar(&r.keyPrefix, "redis-key-prefix", r.keyPrefix, "Starts every Redis key the operator writes, one per installation sharing a Redis.")
}

// options is nil without --redis-addr.
func (r redisFlags) options() *redisconn.Options {
	if r.addr == "" {
		return nil
	}
	return &redisconn.Options{Addr: r.addr, Username: r.username, Password: os.Getenv("REDIS_PASSWORD"),
		PasswordFile: r.passwordFile, CAFile: r.caFile, KeyPrefix: r.keyPrefix}
}

// admissionFlags are the /validate-operator-types webhook's flags.
type admissionFlags struct {
	port                                        int
	host, certDir, webhookConfiguration, server string
	dnsNames                                    string
}

// attributionFlags are the audit attribution flags.
type attributionFlags struct {
	enabled                                bool
	transport, routeAnnotationKey          string
	bindAddress, certFile, keyFile, caFile string
	insecure                               bool
	grace, factTTL                         time.Duration
	replicas                               int
	source                                 string
	observer                               observerFlags
}

// observerFlags are the admission observer's flags.
type observerFlags struct {
	webhookConfiguration, service, serviceNamespace, url string
	servicePort, timeoutSeconds                          int
}

func defaultFlags() flags {
	ns := os.Getenv("POD_NAMESPACE")
	if ns == "" {
		ns = "gitops-reverser"
	}
	return flags{replicaIdentity: os.Getenv("POD_NAME"), metricsAddr: ":8080", probeAddr: ":8081", leaderElect: true, operatorNamespace: ns,
		branchBufferMaxSize: "8Mi", targetResync: 30 * time.Second, commitRequestRetention: 24 * time.Hour,
		redis: redisFlags{keyPrefix: redisconn.DefaultKeyPrefix},
		attribution: attributionFlags{enabled: true, bindAddress: ":9444", source: operator.SourceAudit,
			observer: observerFlags{servicePort: 443},
			grace:    operator.DefaultAttributionGrace, factTTL: operator.DefaultFactTTL, replicas: 1}}
}

func (f *flags) bind(fs *flag.FlagSet) {
	fs.StringVar(&f.metricsAddr, "metrics-bind-address", f.metricsAddr, "Address the metrics endpoint binds to; 0 disables it.")
	fs.StringVar(&f.probeAddr, "health-probe-bind-address", f.probeAddr, "Address of /healthz and /readyz; 0 disables them.")
	fs.StringVar(&f.pprofAddr, "pprof-bind-address", f.pprofAddr,
		"Address of Go's /debug/pprof profiles (e.g. 127.0.0.1:8082, reached with kubectl port-forward); empty or 0 disables them.")
	fs.BoolVar(&f.leaderElect, "leader-elect", f.leaderElect, "Elect a leader, so exactly one replica mirrors.")
	fs.StringVar(&f.leaderElectionNS, "leader-election-namespace", f.leaderElectionNS, "Namespace of the leader Lease (default: --operator-namespace).")
	fs.StringVar(&f.operatorNamespace, "operator-namespace", f.operatorNamespace, "Namespace of remote kubeconfig Secrets and the leader Lease; $POD_NAMESPACE when that is set.")
	fs.StringVar(&f.branchBufferMaxSize, "branch-buffer-max-size", f.branchBufferMaxSize, "A commit window closes once its writes hold this much YAML.")
	fs.StringVar(&f.additionalSensitive, "additional-sensitive-resources", f.additionalSensitive,
		"Comma-separated resource.group names (e.g. sealedsecrets.bitnami.com) written only encrypted, besides core Secrets.")
	fs.StringVar(&f.credentialNamespaces, "credential-namespaces", f.credentialNamespaces,
		"Comma-separated namespaces holding GitProviders and GitTargets: the only ones (with --operator-namespace) whose Secrets "+
			"the operator reads and watches. Empty: every namespace, which needs Secret read access cluster-wide.")
	fs.DurationVar(&f.targetResync, "target-resync-interval", f.targetResync, "How often a healthy GitTarget is checked again.")
	fs.DurationVar(&f.commitRequestRetention, "commit-request-retention", f.commitRequestRetention,
		"How long a finished CommitRequest is kept before it is deleted.")
	fs.StringVar(&f.replicaIdentity, "replica-identity", f.replicaIdentity,
		"This replica's name among several (--replica-count > 1): its Lease and branch claims; $POD_NAME when that is set.")
	f.attribution.bind(fs)
	f.redis.bind(fs)
	f.admission.bind(fs)
}

func (a *admissionFlags) bind(fs *flag.FlagSet) {
	fs.IntVar(&a.port, "admission-webhook-port", a.port,
		"Port of the /validate-operator-types webhook (HTTPS) that names CommitRequest submitters; 0 serves none.")
	fs.StringVar(&a.host, "admission-webhook-host", a.host, "Address the admission webhook binds to (default: all).")
	fs.StringVar(&a.certDir, "admission-webhook-cert-dir", a.certDir,
		"Directory with tls.crt and tls.key (e.g. a cert-manager Secret); empty issues a certificate from a CA the operator generates.")
	fs.StringVar(&a.webhookConfiguration, "admission-webhook-configuration", a.webhookConfiguration,
		"ValidatingWebhookConfiguration whose caBundle the operator keeps when it issues its own certificate.")
	fs.StringVar(&a.server, "admission-webhook-service-host", a.server,
		"Name (or IP) the API server calls the webhook by, for the operator's own certificate (e.g. <service>.<namespace>.svc).")
	fs.StringVar(&a.dnsNames, "admission-webhook-dns-names", a.dnsNames, "Comma-separated further names for the operator's own certificate.")
}

// options is nil when the webhook is off.
func (a admissionFlags) options() *operator.AdmissionOptions {
	if a.port <= 0 {
		return nil
	}
	return &operator.AdmissionOptions{Host: a.host, Port: a.port, CertDir: a.certDir,
		WebhookConfiguration: a.webhookConfiguration, ServiceHost: a.server, DNSNames: commaList(a.dnsNames)}
}

// commaList is the non-empty items of a comma-separated flag.
func commaList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

func (a *attributionFlags) bind(fs *flag.FlagSet) {
	fs.BoolVar(&a.enabled, "author-attribution", a.enabled,
		"Name the Kubernetes actor of each live change as its commit's author, from the API server's audit events (docs/attribution.md).")
	fs.StringVar(&a.transport, "author-attribution-transport", a.transport,
		"How attribution facts travel: redis (Redis Streams; facts survive a restart; needs --redis-addr) or memory "+
			"(in process, one replica). Default: redis when --redis-addr is set, memory otherwise.")
	fs.StringVar(&a.routeAnnotationKey, "author-attribution-audit-route-annotation-key", a.routeAnnotationKey,
		"Enables the bare /audit-webhook, where each audit event names its route in this annotation.")
	fs.DurationVar(&a.grace, "author-attribution-grace", a.grace, "How long a live change waits for its audit fact before it is committed unresolved.")
	fs.DurationVar(&a.factTTL, "author-attribution-fact-ttl", a.factTTL, "How long an audit fact can name an author.")
	fs.StringVar(&a.bindAddress, "audit-bind-address", a.bindAddress, "Address the audit ingress (HTTPS) binds to.")
	fs.StringVar(&a.certFile, "audit-cert-file", a.certFile, "Serving certificate of the audit ingress (PEM).")
	fs.StringVar(&a.keyFile, "audit-key-file", a.keyFile, "Private key of the audit ingress's serving certificate (PEM).")
	fs.StringVar(&a.caFile, "audit-client-ca-file", a.caFile, "CA that signed the API server's audit client certificate (PEM).")
	fs.BoolVar(&a.insecure, "audit-insecure", a.insecure, "Accept audit posts without a client certificate (never in production).")
	fs.IntVar(&a.replicas, "replica-count", a.replicas,
		"How many replicas of the operator run. More than one share the branches (each runs the ones it owns) and need --redis-addr; "+
			"the memory attribution transport needs exactly one.")
	fs.StringVar(&a.source, "author-attribution-source", a.source,
		"Where attribution facts come from: audit (the API server's audit webhook), admission (the admission observer, "+
			"for managed clusters; needs --admission-webhook-port) or both (docs/attribution-admission.md).")
	fs.StringVar(&a.observer.webhookConfiguration, "admission-observer-configuration", a.observer.webhookConfiguration,
		"ValidatingWebhookConfiguration the operator writes the admission observer's webhooks into.")
	fs.StringVar(&a.observer.service, "admission-observer-service", a.observer.service,
		"Service the API server calls the admission observer through (the webhook server's Service).")
	fs.StringVar(&a.observer.serviceNamespace, "admission-observer-service-namespace", a.observer.serviceNamespace,
		"Namespace of --admission-observer-service (default: --operator-namespace).")
	fs.IntVar(&a.observer.servicePort, "admission-observer-service-port", a.observer.servicePort, "Port of --admission-observer-service.")
	fs.StringVar(&a.observer.url, "admission-observer-url", a.observer.url,
		"https://host:port the API server calls the admission observer at, instead of a Service.")
	fs.IntVar(&a.observer.timeoutSeconds, "admission-observer-timeout-seconds", a.observer.timeoutSeconds,
		"How long the API server waits for a review (1 or 2; default 2) before it lets the write through.")
}

// options is nil when attribution is off.
func (a attributionFlags) options() *operator.AttributionOptions {
	if !a.enabled {
		return nil
	}
	return &operator.AttributionOptions{ListenAddr: a.bindAddress, CertFile: a.certFile, KeyFile: a.keyFile,
		ClientCAFile: a.caFile, Insecure: a.insecure, RouteAnnotationKey: a.routeAnnotationKey, Transport: a.transport,
		Replicas: a.replicas, Grace: a.grace, FactTTL: a.factTTL, Source: a.source}
}

// options is nil when the source does not use admission.
func (o observerFlags) options(source, operatorNamespace string) *operator.ObserverOptions {
	if source != operator.SourceAdmission && source != operator.SourceBoth {
		return nil
	}
	ns := o.serviceNamespace
	if ns == "" {
		ns = operatorNamespace
	}
	return &operator.ObserverOptions{WebhookConfiguration: o.webhookConfiguration, ServiceName: o.service,
		ServiceNamespace: ns, ServicePort: int32(o.servicePort), URL: o.url, TimeoutSeconds: int32(o.timeoutSeconds)}
}

func (f flags) options() (operator.Options, error) {
	q, err := resource.ParseQuantity(f.branchBufferMaxSize)
	if err != nil {
		return operator.Options{}, fmt.Errorf("--branch-buffer-max-size %q: %w", f.branchBufferMaxSize, err)
	}
	var sensitive []schema.GroupResource
	for _, s := range commaList(f.additionalSensitive) {
		sensitive = append(sensitive, schema.ParseGroupResource(s))
	}
	attribution := f.attribution.options()
	if attribution != nil {
		attribution.Observer = f.attribution.observer.options(f.attribution.source, f.operatorNamespace)
	}
	return operator.Options{
		MetricsAddr: f.metricsAddr, ProbeAddr: f.probeAddr, PprofAddr: f.pprofAddr, LeaderElect: f.leaderElect,
		LeaderElectionNamespace: f.leaderElectionNS, OperatorNamespace: f.operatorNamespace,
		CredentialNamespaces: commaList(f.credentialNamespaces),
		BufferMax:            int(q.Value()), AdditionalSensitive: sensitive, TargetResync: f.targetResync,
		RecoverPanic: true, Attribution: attribution, Admission: f.admission.options(),
		CommitRequestRetention: f.commitRequestRetention, Redis: f.redis.options(),
		Replicas: f.attribution.replicas, ReplicaIdentity: f.replicaIdentity,
	}, nil
}
