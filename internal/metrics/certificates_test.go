package metrics

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

// selfSigned is a certificate valid until notAfter (whole seconds, as the
// metric reports them), its DER and key.
func selfSigned(t *testing.T, name string, notAfter time.Time) (*x509.Certificate, tls.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return cert, tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// expiries scrapes reg's certificate_expiry_timestamp_seconds by label.
func expiries(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, f := range families {
		require.Equal(t, "gitopsreverser_certificate_expiry_timestamp_seconds", f.GetName())
		for _, m := range f.GetMetric() {
			out[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
		}
	}
	return out
}

// TestCertificateExpiryIsWhatIsServedAtScrapeTime: each source is read on
// every scrape, so a served certificate that was replaced (a certwatcher
// reloading its files, a renewed file) is reported as replaced; a source
// with nothing to report has no series.
func TestCertificateExpiryIsWhatIsServedAtScrapeTime(t *testing.T) {
	first := time.Now().Add(90 * 24 * time.Hour).Truncate(time.Second)
	renewed := first.Add(30 * 24 * time.Hour)
	_, servingFirst := selfSigned(t, "serving", first)
	_, servingRenewed := selfSigned(t, "serving", renewed)
	served := &servingFirst
	caOld, _ := selfSigned(t, "ca-old", first.Add(time.Hour))
	caNew, _ := selfSigned(t, "ca-new", renewed)
	client, _ := selfSigned(t, "kube-apiserver", first.Add(2*time.Hour))
	dir := t.TempDir()
	file := filepath.Join(dir, "tls.crt")
	require.NoError(t, os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: servingFirst.Certificate[0]}), 0o600))

	m := NewCertificateMetrics()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, m.Register(reg))
	require.Empty(t, expiries(t, reg), "no series before anything is served")

	m.Watch(CertAuditServing, ServedBy(func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return served, nil }))
	m.Watch(CertAuditClientCA, EarliestExpiry([]*x509.Certificate{caNew, caOld}))
	m.Watch(CertAdmissionServing, CertificateFile(file))
	m.Watch("missing-file", CertificateFile(filepath.Join(dir, "missing.crt")))
	m.Presented(CertAuditClient, client)
	require.Equal(t, map[string]float64{
		CertAuditServing:     float64(first.Unix()),
		CertAuditClientCA:    float64(first.Add(time.Hour).Unix()),
		CertAdmissionServing: float64(first.Unix()),
		CertAuditClient:      float64(first.Add(2 * time.Hour).Unix()),
	}, expiries(t, reg))

	served = &servingRenewed
	require.NoError(t, os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: servingRenewed.Certificate[0]}), 0o600))
	m.Presented(CertAuditClient, caNew)
	got := expiries(t, reg)
	require.Equal(t, float64(renewed.Unix()), got[CertAuditServing], "the reloaded serving certificate")
	require.Equal(t, float64(renewed.Unix()), got[CertAdmissionServing], "the renewed file")
	require.Equal(t, float64(renewed.Unix()), got[CertAuditClient], "the latest presented certificate")
}
