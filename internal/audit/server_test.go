package audit_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/audit"
)

// authority is a CA that signs leaf certificates.
type authority struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newAuthority(t *testing.T, name string) *authority {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return &authority{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

func (a *authority) pool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(a.cert)
	return pool
}

// issue signs a leaf for a server (with a loopback address) or a client.
func (a *authority) issue(t *testing.T, name string, usage x509.ExtKeyUsage) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	require.NoError(t, err)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// startServer serves srv on a loopback port until the test ends and
// returns its base URL.
func startServer(t *testing.T, srv *audit.Server) string {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, listener) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done, "a stopped server returns nil")
		require.Error(t, srv.Ready(nil), "not ready once stopped")
	})
	return "https://" + listener.Addr().String()
}

// client trusts serverCA and presents cert when it has one.
func client(serverCA *authority, cert *tls.Certificate) *http.Client {
	cfg := &tls.Config{RootCAs: serverCA.pool(), MinVersion: tls.VersionTLS12}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}, Timeout: 30 * time.Second}
}

func emptyList() []byte {
	return []byte(`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[]}`)
}

// TestServerServesOnlyClientsTheAuditCASigned: with mTLS (the default) a
// client without a certificate, or with one another CA signed, is refused
// in the handshake and never reaches the handler; one the audit CA signed
// is served, and its certificate is reported (its expiry is a metric).
func TestServerServesOnlyClientsTheAuditCASigned(t *testing.T) {
	serverCA, clientCA, rogueCA := newAuthority(t, "serving"), newAuthority(t, "audit clients"), newAuthority(t, "rogue")
	serving := serverCA.issue(t, "gitops-reverser-audit", x509.ExtKeyUsageServerAuth)
	observer := newObserver()
	var presentedMu sync.Mutex
	var presented []string
	srv := &audit.Server{
		Handler:        newHandler(t, &recordingTransport{}, observer),
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &serving, nil },
		ClientCAs:      clientCA.pool(),
		ErrorLog:       log.New(io.Discard, "", 0),
		ClientCertificate: func(c *x509.Certificate) {
			presentedMu.Lock()
			defer presentedMu.Unlock()
			presented = append(presented, c.Subject.CommonName+" by "+c.Issuer.CommonName)
		},
	}
	require.Error(t, srv.Ready(nil), "not ready before it serves")
	url := startServer(t, srv) + "/audit-webhook/prod"

	apiserver := clientCA.issue(t, "kube-apiserver", x509.ExtKeyUsageClientAuth)
	rogue := rogueCA.issue(t, "kube-apiserver", x509.ExtKeyUsageClientAuth)
	for name, cert := range map[string]*tls.Certificate{"no certificate": nil, "another CA's certificate": &rogue} {
		resp, err := client(serverCA, cert).Post(url, "application/json", bytes.NewReader(emptyList()))
		if err == nil {
			_ = resp.Body.Close()
		}
		require.Error(t, err, name)
	}
	require.Empty(t, observer.lists, "a refused client never reaches the handler")

	resp, err := client(serverCA, &apiserver).Post(url, "application/json", bytes.NewReader(emptyList()))
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, []listReport{{outcome: audit.ListOK}}, observer.lists)
	require.NoError(t, srv.Ready(nil), "ready while serving")
	presentedMu.Lock()
	defer presentedMu.Unlock()
	require.Equal(t, []string{"kube-apiserver by audit clients"}, presented, "only the verified client certificate is reported")
}

// TestInsecureServerServesClientsWithoutCertificates: Insecure turns the
// client check off (tests only).
func TestInsecureServerServesClientsWithoutCertificates(t *testing.T) {
	serverCA := newAuthority(t, "serving")
	serving := serverCA.issue(t, "gitops-reverser-audit", x509.ExtKeyUsageServerAuth)
	srv := &audit.Server{
		Handler:        newHandler(t, &recordingTransport{}, nil),
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &serving, nil },
		Insecure:       true,
	}
	resp, err := client(serverCA, nil).Post(startServer(t, srv)+"/audit-webhook/prod", "application/json", bytes.NewReader(emptyList()))
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// TestServerRefusesToStartWithoutItsTLSMaterial: no serving certificate,
// or mTLS without a client CA, is an error, not an open port.
func TestServerRefusesToStartWithoutItsTLSMaterial(t *testing.T) {
	getCert := func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return nil, nil }
	for name, srv := range map[string]*audit.Server{
		"no serving certificate": {ClientCAs: x509.NewCertPool()},
		"no client CA":           {GetCertificate: getCert},
	} {
		listener, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		require.Error(t, srv.Serve(context.Background(), listener), name)
		_, err = net.Dial("tcp", listener.Addr().String())
		require.Error(t, err, "%s: the listener is closed", name)
	}
}

func TestLoadClientCAs(t *testing.T) {
	dir := t.TempDir()
	good, empty := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "empty.crt")
	require.NoError(t, os.WriteFile(good, newAuthority(t, "audit clients").pem, 0o600))
	require.NoError(t, os.WriteFile(empty, []byte("not a certificate"), 0o600))

	pool, cas, err := audit.LoadClientCAs(good)
	require.NoError(t, err)
	require.NotNil(t, pool)
	require.Len(t, cas, 1, "the CAs are returned for their expiry")
	require.Equal(t, "audit clients", cas[0].Subject.CommonName)
	_, _, err = audit.LoadClientCAs(empty)
	require.ErrorContains(t, err, "no PEM certificate")
	_, _, err = audit.LoadClientCAs(filepath.Join(dir, "missing.crt"))
	require.Error(t, err)
}
