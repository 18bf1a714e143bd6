package metrics

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The values of certificate_expiry_timestamp_seconds{certificate}.
const (
	// CertAuditServing is the audit ingress's serving certificate.
	CertAuditServing = "audit-serving"
	// CertAuditClientCA is the CA the ingress verifies kube-apiserver's
	// client certificate with (the earliest expiry of its bundle).
	CertAuditClientCA = "audit-client-ca"
	// CertAuditClient is the client certificate kube-apiserver presented
	// on its latest connection: the file a cluster admin copied to the
	// control plane, which nothing renews there.
	CertAuditClient = "audit-client"
	// CertAdmissionServing is the admission webhook's serving certificate.
	CertAdmissionServing = "admission-serving"
)

// NotAfterFunc reports when a certificate expires; false when there is
// none to report (not issued yet, a file that does not parse).
type NotAfterFunc func() (time.Time, bool)

// CertificateMetrics is the family
// gitopsreverser_certificate_expiry_timestamp_seconds{certificate}: the
// NotAfter of each certificate the operator serves or is presented, read
// at scrape time from what it serves, so a certificate reloaded from its
// files is reported as reloaded. A certificate with nothing to report has
// no series (alert on its absence too).
type CertificateMetrics struct {
	desc *prometheus.Desc

	mu      sync.Mutex
	sources map[string]NotAfterFunc
}

// NewCertificateMetrics builds the family with no certificate yet.
func NewCertificateMetrics() *CertificateMetrics {
	return &CertificateMetrics{
		desc: prometheus.NewDesc(namespace+"_certificate_expiry_timestamp_seconds",
			"When a certificate expires (its NotAfter, Unix seconds): audit-serving and admission-serving, the "+
				"certificates the operator serves; audit-client-ca, the CA kube-apiserver's audit client certificate must "+
				"be signed by; audit-client, the client certificate kube-apiserver presented on its latest connection.",
			[]string{"certificate"}, nil),
		sources: map[string]NotAfterFunc{},
	}
}

// Register adds the family to reg.
func (m *CertificateMetrics) Register(reg prometheus.Registerer) error { return reg.Register(m) }

// Watch reports the certificate called name from notAfter, asked on every
// scrape; a second Watch of the same name replaces the first.
func (m *CertificateMetrics) Watch(name string, notAfter NotAfterFunc) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sources[name] = notAfter
}

// Presented reports cert, a certificate a peer presented, as name until
// the next one.
func (m *CertificateMetrics) Presented(name string, cert *x509.Certificate) {
	notAfter := cert.NotAfter
	m.Watch(name, func() (time.Time, bool) { return notAfter, true })
}

// Describe implements prometheus.Collector.
func (m *CertificateMetrics) Describe(ch chan<- *prometheus.Desc) { ch <- m.desc }

// Collect implements prometheus.Collector.
func (m *CertificateMetrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	names := make([]string, 0, len(m.sources))
	for name := range m.sources {
		names = append(names, name)
	}
	sources := make(map[string]NotAfterFunc, len(m.sources))
	for name, f := range m.sources {
		sources[name] = f
	}
	m.mu.Unlock()
	sort.Strings(names)
	for _, name := range names {
		notAfter, ok := sources[name]()
		if !ok {
			continue
		}
		ch <- prometheus.MustNewConstMetric(m.desc, prometheus.GaugeValue, float64(notAfter.Unix()), name)
	}
}

// ServedBy reports the leaf of the certificate get serves (a tls.Config's
// GetCertificate hook).
func ServedBy(get func(*tls.ClientHelloInfo) (*tls.Certificate, error)) NotAfterFunc {
	return func() (time.Time, bool) {
		cert, err := get(nil)
		if err != nil || cert == nil || len(cert.Certificate) == 0 {
			return time.Time{}, false
		}
		leaf := cert.Leaf
		if leaf == nil {
			if leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
				return time.Time{}, false
			}
		}
		return leaf.NotAfter, true
	}
}

// EarliestExpiry reports the earliest NotAfter of certs (a CA bundle: a
// client certificate stops verifying once its CA expires).
func EarliestExpiry(certs []*x509.Certificate) NotAfterFunc {
	return func() (time.Time, bool) {
		var earliest time.Time
		for _, c := range certs {
			if earliest.IsZero() || c.NotAfter.Before(earliest) {
				earliest = c.NotAfter
			}
		}
		return earliest, !earliest.IsZero()
	}
}

// CertificateFile reports the first certificate of the PEM file at path,
// read again on every scrape (a server that reloads the file serves what
// it holds now).
func CertificateFile(path string) NotAfterFunc {
	return func() (time.Time, bool) {
		cert, err := readFirstCertificate(path)
		if err != nil {
			return time.Time{}, false
		}
		return cert.NotAfter, true
	}
}

func readFirstCertificate(path string) (*x509.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	for block, rest := pem.Decode(data); block != nil; block, rest = pem.Decode(rest) {
		if block.Type == "CERTIFICATE" {
			return x509.ParseCertificate(block.Bytes)
		}
	}
	return nil, fmt.Errorf("%s holds no PEM certificate", path)
}
