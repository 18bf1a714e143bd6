package operator

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/configbutler/gitops-reverser/internal/admission"
	"github.com/configbutler/gitops-reverser/internal/metrics"
)

// AdmissionOptions serve the /validate-operator-types webhook, which names
// the submitter of each CommitRequest.
type AdmissionOptions struct {
	// Host and Port are where the webhook listens (all addresses when Host
	// is empty).
	Host string
	Port int
	// CertDir holds tls.crt and tls.key (a cert-manager Certificate's
	// Secret); when empty the operator issues its own from a CA it
	// generates, and keeps that CA in the caBundle of WebhookConfiguration.
	CertDir              string
	WebhookConfiguration string
	// ServiceHost is the name or IP the API server calls the webhook by
	// (the Service's DNS name); DNSNames are more names for the
	// self-issued certificate.
	ServiceHost string
	DNSNames    []string
}

func (a *AdmissionOptions) check() error {
	if a.Port <= 0 {
		return errors.New("the admission webhook needs a port")
	}
	if a.CertDir == "" && a.ServiceHost == "" {
		return errors.New("a self-issued admission webhook certificate needs the name the API server calls it by (--admission-webhook-service-host)")
	}
	return nil
}

// admissionSetup is the webhook a manager serves: the server for its
// options, and the record the CommitRequest controller reads.
type admissionSetup struct {
	server webhook.Server
	// certs issues the serving certificate; nil when certDir holds it.
	certs      *admission.SelfSigned
	certDir    string
	submitters *admission.Submitters
}

// newAdmission builds the webhook server before the manager, which takes
// it in its options; nil options serve nothing. The options were checked
// by checkOptions.
func newAdmission(cfg *rest.Config, o *AdmissionOptions, scheme *runtime.Scheme) (*admissionSetup, error) {
	if o == nil {
		return nil, nil
	}
	s := &admissionSetup{submitters: admission.NewSubmitters(0, 0, nil), certDir: o.CertDir}
	opts := webhook.Options{Host: o.Host, Port: o.Port, CertDir: o.CertDir}
	if o.CertDir == "" {
		// Uncached: the operator reads one ValidatingWebhookConfiguration,
		// it does not watch them all.
		c, err := client.New(cfg, client.Options{Scheme: scheme})
		if err != nil {
			return nil, fmt.Errorf("building the admission webhook's client: %w", err)
		}
		s.certs = &admission.SelfSigned{Host: o.ServiceHost, DNSNames: o.DNSNames, Webhook: o.WebhookConfiguration,
			Client: c, Log: ctrl.Log.WithName("admission")}
		if ip := net.ParseIP(o.ServiceHost); ip != nil {
			s.certs.IPs = []net.IP{ip}
		}
		opts.TLSOpts = []func(*tls.Config){func(c *tls.Config) { c.GetCertificate = s.certs.GetCertificate }}
	}
	s.server = webhook.NewServer(opts)
	return s, nil
}

// start registers the handler and, for a self-issued certificate, issues
// it before the server first serves and keeps it current; certs is told
// the serving certificate. recoverPanic is Options.RecoverPanic: without
// it a panic in the handler crashes the process (guardPanics) instead of
// becoming a 500 answer.
func (s *admissionSetup) start(ctx context.Context, mgr ctrl.Manager, reg prometheus.Registerer, certs *metrics.CertificateMetrics,
	recoverPanic bool) error {
	if s == nil {
		return nil
	}
	am := metrics.NewAdmissionMetrics()
	if err := am.Register(reg); err != nil {
		return fmt.Errorf("registering admission metrics: %w", err)
	}
	// The manager runs the server it was given once asked for it.
	handler := &webhook.Admission{Handler: &admission.Handler{Submitters: s.submitters, Observer: am}, RecoverPanic: &recoverPanic}
	mgr.GetWebhookServer().Register(admission.Path, guardPanics("admission", handler, recoverPanic))
	if s.certs == nil {
		// controller-runtime serves, and reloads, <CertDir>/tls.crt.
		certs.Watch(metrics.CertAdmissionServing, metrics.CertificateFile(filepath.Join(s.certDir, "tls.crt")))
		return nil
	}
	certs.Watch(metrics.CertAdmissionServing, metrics.ServedBy(s.certs.GetCertificate))
	if err := s.certs.Ensure(ctx); err != nil {
		// Serving waits for nothing: a caBundle not injected yet only
		// costs submitters until the next check.
		ctrl.Log.WithName("admission").Error(err, "the admission webhook certificate is not in place yet; retrying")
	}
	if err := mgr.Add(s.certs); err != nil {
		return fmt.Errorf("adding the admission webhook certificate keeper: %w", err)
	}
	return nil
}

// share has the submitter record written to and read from a record every
// replica reads; errors is told about its failures.
func (s *admissionSetup) share(shared admission.SharedSubmitters, errors interface{ Failed(op string, err error) }) {
	if s == nil {
		return
	}
	s.submitters.Shared = shared
	s.submitters.OnError = errors.Failed
}

// lookup is the submitter record for the CommitRequest controller; nil
// when the webhook is off.
func (s *admissionSetup) lookup() admission.SubmitterLookup {
	if s == nil {
		return nil
	}
	return s.submitters
}
