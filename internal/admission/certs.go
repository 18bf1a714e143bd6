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
// it expires; the caBundle then holds the old and the new CA, so the API
// server trusts both while it switches. It adds its CAs to the bundle
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
	// own are this process's CAs: the current one, then the one before the
	// last renewal.
	own []*x509.Certificate
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

// Ensure issues a certificate when there is none or it is due for
// renewal, and then brings the webhook configuration's caBundle up to date.
func (s *SelfSigned) Ensure(ctx context.Context) error {
	if s.due() {
		if err := s.renew(); err != nil {
			return err
		}
	}
	return s.inject(ctx)
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

func (s *SelfSigned) due() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.cert == nil || !s.clock().Now().Before(s.expires.Add(-s.renewBefore()))
}

func (s *SelfSigned) renew() error {
	next, err := issue(s.Host, s.DNSNames, s.IPs, s.clock().Now(), s.validity())
	if err != nil {
		return fmt.Errorf("issuing the admission webhook certificate: %w", err)
	}
	s.mu.Lock()
	s.own = append([]*x509.Certificate{next.ca}, s.own...)[:min(len(s.own)+1, 2)]
	s.cert, s.expires = &next.pair, next.expires
	s.mu.Unlock()
	s.Log.Info("issued the admission webhook certificate", "expires", next.expires)
	return nil
}

// inject adds this process's CAs to the caBundle of every webhook of the
// configuration that does not hold them yet.
func (s *SelfSigned) inject(ctx context.Context) error {
	if s.Webhook == "" || s.Client == nil {
		return nil
	}
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
