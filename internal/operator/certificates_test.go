package operator

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/test/harness"
)

// TestTheCertificateExpiryMetricReportsWhatIsServedAndPresented runs the
// operator with the audit ingress and the admission webhook (its own CA)
// against a real kube-apiserver that posts its audit batches to the
// ingress: the scraped expiry of each certificate is the NotAfter of the
// certificate the operator's ports serve, of its client CA, and of the
// client certificate kube-apiserver presents.
func TestTheCertificateExpiryMetricReportsWhatIsServedAndPresented(t *testing.T) {
	dir := t.TempDir()
	auditPort, err := harness.FreePort()
	require.NoError(t, err)
	admissionPort, err := harness.FreePort()
	require.NoError(t, err)
	servingCA, err := harness.NewCA("ingress serving")
	require.NoError(t, err)
	clientCA, err := harness.NewCA("audit clients")
	require.NoError(t, err)
	serving, err := servingCA.Server(dir, "audit-ingress", "127.0.0.1")
	require.NoError(t, err)
	apiserver, err := clientCA.Client(dir, "apiserver-audit", "kube-apiserver")
	require.NoError(t, err)
	clientCAFile, err := clientCA.WriteCert(dir, "audit-client-ca.crt")
	require.NoError(t, err)
	webhook, err := harness.WriteAuditWebhookConfig(dir, fmt.Sprintf("https://127.0.0.1:%d/audit-webhook/default", auditPort),
		servingCA.CertPEM, apiserver)
	require.NoError(t, err)
	// Every request at Metadata level: the API server posts as soon as
	// anything (the operator's own reads) happens.
	policy := filepath.Join(dir, "audit-policy.yaml")
	require.NoError(t, os.WriteFile(policy, []byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n  - level: Metadata\n"), 0o600))
	kube, err := harness.StartKube(harness.KubeOptions{AuditPolicyFile: policy, AuditWebhookConfigFile: webhook,
		AuditBatchMaxWait: 200 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(kube.Stop)

	reg := prometheus.NewRegistry()
	ctx, stop := context.WithCancel(context.Background())
	run := &operatorRun{exited: make(chan struct{})}
	go func() {
		defer close(run.exited)
		run.err = Run(ctx, Options{
			Config: kube.Config(), MetricsAddr: "0", ProbeAddr: "0", OperatorNamespace: "default", Registry: reg,
			SkipNameValidation: true,
			Attribution: &AttributionOptions{ListenAddr: "127.0.0.1:" + strconv.Itoa(auditPort), CertFile: serving.CertFile,
				KeyFile: serving.KeyFile, ClientCAFile: clientCAFile, Transport: TransportMemory, Replicas: 1},
			Admission: &AdmissionOptions{Host: "127.0.0.1", Port: admissionPort, ServiceHost: "127.0.0.1"},
		})
	}()
	t.Cleanup(func() {
		stop()
		<-run.exited
		require.NoError(t, run.err)
	})

	run.waitFor(t, "kube-apiserver's client certificate at the audit ingress", func() bool {
		_, presented := certificateExpiries(t, reg)["audit-client"]
		return presented
	})
	var admissionServed time.Time
	run.waitFor(t, "the admission webhook serving", func() bool {
		served, err := servedCertificate("127.0.0.1:"+strconv.Itoa(admissionPort), nil)
		if err == nil {
			admissionServed = served.NotAfter
		}
		return err == nil
	})
	clientPair, err := tls.X509KeyPair(apiserver.CertPEM, apiserver.KeyPEM)
	require.NoError(t, err)
	auditServed, err := servedCertificate("127.0.0.1:"+strconv.Itoa(auditPort), &clientPair)
	require.NoError(t, err)

	require.Equal(t, map[string]float64{
		"audit-serving":     float64(auditServed.NotAfter.Unix()),
		"audit-client-ca":   float64(pemCertificate(t, clientCA.CertPEM).NotAfter.Unix()),
		"audit-client":      float64(pemCertificate(t, apiserver.CertPEM).NotAfter.Unix()),
		"admission-serving": float64(admissionServed.Unix()),
	}, certificateExpiries(t, reg))
	require.Equal(t, pemCertificate(t, serving.CertPEM).NotAfter, auditServed.NotAfter, "the ingress serves its file")
}

// certificateExpiries scrapes gitopsreverser_certificate_expiry_timestamp_seconds.
func certificateExpiries(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "gitopsreverser_certificate_expiry_timestamp_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			out[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
		}
	}
	return out
}

// servedCertificate is the leaf a TLS server at addr serves, presenting
// client when it asks for a certificate.
func servedCertificate(addr string, client *tls.Certificate) (*x509.Certificate, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: true} //nolint:gosec // reads the served certificate, trusts nothing
	if client != nil {
		cfg.Certificates = []tls.Certificate{*client}
	}
	conn, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		return nil, fmt.Errorf("dialing %s: %w", addr, err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0], nil
}

func pemCertificate(t *testing.T, data []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(data)
	require.NotNil(t, block)
	cert, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	return cert
}
