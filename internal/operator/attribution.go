package operator

import (
	"errors"
	"fmt"
	"time"

	"github.com/configbutler/gitops-reverser/internal/attribution"
)

// Transports --author-attribution-transport names.
const (
	// TransportMemory runs the fact streams in process: one replica only,
	// and every fact not yet joined is lost on restart.
	TransportMemory = "memory"
	// TransportRedis is Redis Streams: facts outlive a restart (a new
	// process re-warms its index from one fact TTL of retention) and reach
	// every replica. It needs --redis-addr.
	TransportRedis = "redis"
)

// Sources --author-attribution-source names: where facts come from.
const (
	// SourceAudit is the API server's audit webhook (the default): facts of
	// persisted writes, exact, but it needs kube-apiserver flags.
	SourceAudit = "audit"
	// SourceAdmission is the admission observer: a validating webhook that
	// works on every managed cluster, whose facts count once a watch event
	// confirms them.
	SourceAdmission = "admission"
	// SourceBoth runs both; an audit fact wins over an admission fact for
	// the same change (docs/attribution-admission.md).
	SourceBoth = "both"
)

// AttributionOptions switch on audit attribution: the audit ingress, the
// fact streams, the fact index and the resolver that names the author of
// each live change. A nil *AttributionOptions is configured-author mode.
type AttributionOptions struct {
	// Source is SourceAudit, SourceAdmission or SourceBoth; "" is
	// SourceAudit.
	Source string
	// Observer configures the admission observer; required with
	// SourceAdmission or SourceBoth.
	Observer *ObserverOptions
	// ListenAddr is where the audit ingress serves HTTPS.
	ListenAddr string
	// CertFile and KeyFile are its serving certificate.
	CertFile, KeyFile string
	// ClientCAFile is the CA the API server's client certificate must be
	// signed by; Insecure serves without asking for one (tests only).
	ClientCAFile string
	Insecure     bool
	// RouteAnnotationKey, when set, enables the bare /audit-webhook, where
	// each event names its route in this annotation.
	RouteAnnotationKey string
	// Transport is TransportMemory or TransportRedis; "" picks redis when
	// Redis is configured, memory otherwise (see resolveTransport).
	Transport string
	// Replicas is how many operator replicas run; the memory transport is
	// refused with more than one.
	Replicas int
	// Grace is how long a live change waits for its fact
	// (DefaultAttributionGrace when zero).
	Grace time.Duration
	// FactTTL is how long a fact can be joined (DefaultFactTTL when zero).
	FactTTL time.Duration
	// MaxBodyBytes bounds one audit request (32 MiB when zero).
	MaxBodyBytes int64
}

// Defaults of AttributionOptions. The grace and the fact TTL are the
// attribution package's own defaults, so the flags and a zero field of the
// resolver or the index cannot disagree.
const (
	DefaultAttributionGrace = attribution.DefaultGrace
	DefaultFactTTL          = attribution.DefaultTTL
	DefaultAuditBodyBytes   = 32 << 20
)

// resolveTransport fills in the default transport: Redis Streams when a
// Redis is configured, so facts survive a restart wherever they can; the
// in-process ring otherwise, so an install without Redis runs as before.
func (a *AttributionOptions) resolveTransport(hasRedis bool) {
	if a.Transport != "" {
		return
	}
	a.Transport = TransportMemory
	if hasRedis {
		a.Transport = TransportRedis
	}
}

// check refuses options the operator cannot run with, naming the flag.
func (a *AttributionOptions) check(hasRedis bool) error {
	switch {
	case a.Transport == TransportRedis && !hasRedis:
		return errors.New("--author-attribution-transport=redis needs --redis-addr; " +
			"without Redis use --author-attribution-transport=memory (one replica)")
	case a.Transport != TransportMemory && a.Transport != TransportRedis:
		return fmt.Errorf("--author-attribution-transport %q: want memory or redis", a.Transport)
	case a.Transport == TransportMemory && a.Replicas > 1:
		return fmt.Errorf("--author-attribution-transport=memory keeps facts in one process and is refused with %d replicas", a.Replicas)
	case a.Source != "" && a.Source != SourceAudit && a.Source != SourceAdmission && a.Source != SourceBoth:
		return fmt.Errorf("--author-attribution-source %q: want audit, admission or both", a.Source)
	case a.admission() && a.Observer == nil:
		return errors.New("--author-attribution-source=" + a.Source + " needs the admission observer's webhook configuration (--admission-observer-configuration)")
	case a.admission():
		if err := a.Observer.check(); err != nil {
			return err
		}
	}
	if !a.audit() {
		return nil
	}
	switch {
	case a.ListenAddr == "":
		return errors.New("attribution needs the audit ingress address (--audit-bind-address)")
	case a.CertFile == "" || a.KeyFile == "":
		return errors.New("attribution needs the audit ingress serving certificate (--audit-cert-file and --audit-key-file)")
	case a.ClientCAFile == "" && !a.Insecure:
		return errors.New("attribution needs the CA of the API server's audit client certificate (--audit-client-ca-file), " +
			"or --audit-insecure to accept any client (never in production)")
	}
	return nil
}

// audit reports whether the audit ingress runs.
func (a *AttributionOptions) audit() bool { return a.Source != SourceAdmission }

// admission reports whether the admission observer runs.
func (a *AttributionOptions) admission() bool {
	return a.Source == SourceAdmission || a.Source == SourceBoth
}

func (a *AttributionOptions) grace() time.Duration {
	if a.Grace <= 0 {
		return DefaultAttributionGrace
	}
	return a.Grace
}

func (a *AttributionOptions) factTTL() time.Duration {
	if a.FactTTL <= 0 {
		return DefaultFactTTL
	}
	return a.FactTTL
}

func (a *AttributionOptions) maxBodyBytes() int64 {
	if a.MaxBodyBytes <= 0 {
		return DefaultAuditBodyBytes
	}
	return a.MaxBodyBytes
}
