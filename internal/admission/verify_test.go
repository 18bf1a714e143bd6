package admission

import (
	"crypto/tls"
	"crypto/x509"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func x509Pool(t *testing.T, bundle []byte) *x509.CertPool {
	t.Helper()
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(bundle))
	return pool
}

func parse(cert *tls.Certificate) (*x509.Certificate, error) {
	return x509.ParseCertificate(cert.Certificate[0])
}

func verifyOptions(pool *x509.CertPool, name string, at time.Time) x509.VerifyOptions {
	return x509.VerifyOptions{Roots: pool, DNSName: name, CurrentTime: at}
}
