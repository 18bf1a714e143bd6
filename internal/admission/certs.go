package admission

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/types"
	certutil "k8s.io/client-go/util/cert"
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
// server trusts both while it switches.
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

	mu       sync.RWMutex
	cert     *tls.Certificate
	expires  time.Time
	bundle   []byte
	previous []byte // the CA before the last renewal
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

// CABundle is the PEM the API server must trust.
func (s *SelfSigned) CABundle() []byte {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return append(append([]byte(nil), s.bundle...), s.previous...)
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
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKeyWithOptions(certutil.SelfSignedCertKeyOptions{
		Host: s.Host, AlternateDNS: s.DNSNames, AlternateIPs: s.IPs, MaxAge: s.validity()})
	if err != nil {
		return fmt.Errorf("generating the admission webhook certificate: %w", err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("loading the admission webhook certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return fmt.Errorf("reading the admission webhook certificate: %w", err)
	}
	// The generated chain is the serving certificate, then its CA.
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: pair.Certificate[len(pair.Certificate)-1]})
	s.mu.Lock()
	s.previous, s.bundle = s.bundle, ca
	s.cert, s.expires = &pair, leaf.NotAfter
	s.mu.Unlock()
	s.Log.Info("issued the admission webhook certificate", "expires", leaf.NotAfter)
	return nil
}

// inject writes the caBundle into every webhook of the configuration
// that does not hold it yet.
func (s *SelfSigned) inject(ctx context.Context) error {
	if s.Webhook == "" || s.Client == nil {
		return nil
	}
	var cfg admissionregistrationv1.ValidatingWebhookConfiguration
	if err := s.Client.Get(ctx, types.NamespacedName{Name: s.Webhook}, &cfg); err != nil {
		return fmt.Errorf("reading ValidatingWebhookConfiguration %s: %w", s.Webhook, err)
	}
	bundle := s.CABundle()
	base := cfg.DeepCopy()
	changed := false
	for i := range cfg.Webhooks {
		if !bytes.Equal(cfg.Webhooks[i].ClientConfig.CABundle, bundle) {
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
