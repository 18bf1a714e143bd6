package admission

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Defaults of SelfSigned.
const (
	DefaultCertValidity = 365 * 24 * time.Hour
	// DefaultRenewBefore renews a serving certificate a month before it
	// expires.
	DefaultRenewBefore = 30 * 24 * time.Hour
	// DefaultCheckEvery is how often the caBundle of the webhook
	// configuration is checked: a helm upgrade renders it empty again.
	DefaultCheckEvery = time.Minute
)

// SelfSigned serves the webhook with a certificate of a CA it generates
// itself, and keeps that CA in the caBundle of the webhook configuration:
// the install path without cert-manager. It renews the certificate before
// it expires: the new CA goes into the bundle beside the old one, and the
// new certificate is served from the check after that write, when the API
// server trusts it. It adds its CAs to the bundle
// without removing another process's (mergeBundle), so the old and the new
// pod of a rolling update are both trusted while both serve.
type SelfSigned struct {
	// Host is the name or IP the API server calls; DNSNames and IPs are
	// further names the certificate is valid for.
	Host     string
	DNSNames []string
	IPs      []net.IP
	// Webhook is the ValidatingWebhookConfiguration whose caBundle is kept;
	// empty when something else injects it.
	Webhook  string
	Client   client.Client
	Clock    clock.WithTicker
	Validity time.Duration
	// RenewBefore is how long before expiry the certificate is renewed.
	RenewBefore time.Duration
	CheckEvery  time.Duration
	Log         logr.Logger

	mu      sync.RWMutex
	cert    *tls.Certificate
	expires time.Time
	// own are this process's CAs: the newest one, then the one before the
	// last renewal.
	own []*x509.Certificate
	// pending is a renewal not served yet: its CA is added to the bundle
	// first, and the certificate served from the check after the one that
	// wrote it, once the API server trusts it. injected says that write
	// happened.
	pending  *issued
	injected bool
}

// GetCertificate is the tls.Config hook that serves the current
// certificate.
func (s *SelfSigned) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.cert == nil {
		return nil, errors.New("no serving certificate yet")
	}
	return s.cert, nil
}

// CABundle is the PEM of this process's CAs, which the API server must
// trust to call it.
func (s *SelfSigned) CABundle() []byte {
	return encodeCAs(s.ownCAs())
}

func (s *SelfSigned) ownCAs() []*x509.Certificate {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return append([]*x509.Certificate(nil), s.own...)
}

// Ensure issues a certificate when there is none (served at once) or one
// is due for renewal (served from the check after its CA is in the
// bundle), and brings the webhook configuration's caBundle up to date.
func (s *SelfSigned) Ensure(ctx context.Context) error {
	if err := s.issueDue(); err != nil {
		return err
	}
	if err := s.inject(ctx); err != nil {
		return err
	}
	s.servePending()
	return nil
}

// Start issues the first certificate and keeps it and the caBundle current
// until ctx ends (a manager Runnable that runs on every replica: every
// replica serves the webhook).
func (s *SelfSigned) Start(ctx context.Context) error {
	if err := s.Ensure(ctx); err != nil {
		s.Log.Error(err, "the admission webhook certificate is not in place yet; retrying")
	}
	t := s.clock().NewTicker(s.checkEvery())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
			if err := s.Ensure(ctx); err != nil {
				s.Log.Error(err, "keeping the admission webhook certificate")
			}
		}
	}
}

// NeedLeaderElection: every replica serves the webhook.
func (s *SelfSigned) NeedLeaderElection() bool { return false }

// issueDue issues the first certificate, which is served at once, or a
// renewal that is due and not issued yet, which waits in pending.
func (s *SelfSigned) issueDue() error {
	s.mu.RLock()
	first := s.cert == nil
	due := !first && s.pending == nil && !s.clock().Now().Before(s.expires.Add(-s.renewBefore()))
	s.mu.RUnlock()
	if !first && !due {
		return nil
	}
	next, err := issue(s.Host, s.DNSNames, s.IPs, s.clock().Now(), s.validity())
	if err != nil {
		return fmt.Errorf("issuing the admission webhook certificate: %w", err)
	}
	s.mu.Lock()
	s.own = append([]*x509.Certificate{next.ca}, s.own...)[:min(len(s.own)+1, 2)]
	if first {
		s.cert, s.expires = &next.pair, next.expires
	} else {
		s.pending, s.injected = next, false
	}
	s.mu.Unlock()
	s.Log.Info("issued the admission webhook certificate", "expires", next.expires, "servedNow", first)
	return nil
}

// servePending is called after a successful inject: a pending renewal is
// served once a previous check has put its CA into the bundle, so the API
// server has had time to trust it.
func (s *SelfSigned) servePending() {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.pending == nil:
	case !s.injected:
		s.injected = true
	default:
		s.cert, s.expires = &s.pending.pair, s.pending.expires
		s.pending, s.injected = nil, false
	}
}

// inject adds this process's CAs to the caBundle of every webhook of the
// configuration that does not hold them yet.
func (s *SelfSigned) inject(ctx context.Context) error {
	if s.Webhook == "" || s.Client == nil {
		return nil
	}
	// Another replica may write the bundle at the same moment: read and
	// merge again instead of waiting for the next check.
	return retry.RetryOnConflict(retry.DefaultRetry, func() error { return s.injectOnce(ctx) })
}

func (s *SelfSigned) injectOnce(ctx context.Context) error {
	var cfg admissionregistrationv1.ValidatingWebhookConfiguration
	if err := s.Client.Get(ctx, types.NamespacedName{Name: s.Webhook}, &cfg); err != nil {
		return fmt.Errorf("reading ValidatingWebhookConfiguration %s: %w", s.Webhook, err)
	}
	own := s.ownCAs()
	base := cfg.DeepCopy()
	changed := false
	for i := range cfg.Webhooks {
		if bundle, write := mergeBundle(own, cfg.Webhooks[i].ClientConfig.CABundle, s.clock().Now()); write {
			cfg.Webhooks[i].ClientConfig.CABundle = bundle
			changed = true
		}
	}
	if !changed {
		return nil
	}
	if err := s.Client.Patch(ctx, &cfg, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("writing the caBundle of ValidatingWebhookConfiguration %s: %w", s.Webhook, err)
	}
	s.Log.Info("injected the admission webhook CA", "webhookConfiguration", s.Webhook)
	return nil
}

func (s *SelfSigned) clock() clock.WithTicker {
	if s.Clock != nil {
		return s.Clock
	}
	return clock.RealClock{}
}

func (s *SelfSigned) validity() time.Duration {
	if s.Validity > 0 {
		return s.Validity
	}
	return DefaultCertValidity
}

func (s *SelfSigned) renewBefore() time.Duration {
	if s.RenewBefore > 0 {
		return s.RenewBefore
	}
	return DefaultRenewBefore
}

func (s *SelfSigned) checkEvery() time.Duration {
	if s.CheckEvery > 0 {
		return s.CheckEvery
	}
	return DefaultCheckEvery
}
