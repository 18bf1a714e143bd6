package harness

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// CA is a throw-away certificate authority for tests that need real TLS
// between real parts: the API server posting audit events to the
// operator's ingress over mTLS, admission webhooks.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// CertPEM is the CA certificate, for a trust bundle.
	CertPEM []byte
}

// Pair is a certificate and its private key, PEM-encoded and written to
// CertFile and KeyFile.
type Pair struct {
	CertPEM, KeyPEM   []byte
	CertFile, KeyFile string
}

// NewCA makes a CA valid for a day.
func NewCA(name string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the %s CA key: %w", name, err)
	}
	template := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Minute),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("creating the %s CA certificate: %w", name, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing the %s CA certificate: %w", name, err)
	}
	return &CA{cert: cert, key: key, CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// WriteCert writes the CA certificate to dir/name and returns the path.
func (ca *CA) WriteCert(dir, name string) (string, error) {
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, ca.CertPEM, 0o600); err != nil {
		return "", fmt.Errorf("writing the CA certificate: %w", err)
	}
	return path, nil
}

// Server issues a serving certificate for hosts (DNS names or IPs),
// written to dir/<name>.crt and dir/<name>.key.
func (ca *CA) Server(dir, name string, hosts ...string) (Pair, error) {
	template := ca.leaf(name, x509.ExtKeyUsageServerAuth)
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			template.IPAddresses = append(template.IPAddresses, ip)
		} else {
			template.DNSNames = append(template.DNSNames, h)
		}
	}
	return ca.issue(dir, name, template)
}

// Client issues a client certificate for commonName, written to
// dir/<name>.crt and dir/<name>.key.
func (ca *CA) Client(dir, name, commonName string) (Pair, error) {
	template := ca.leaf(commonName, x509.ExtKeyUsageClientAuth)
	return ca.issue(dir, name, template)
}

func (ca *CA) leaf(commonName string, usage x509.ExtKeyUsage) *x509.Certificate {
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: commonName},
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
	}
}

func (ca *CA) issue(dir, name string, template *x509.Certificate) (Pair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Pair{}, fmt.Errorf("generating the key of %s: %w", name, err)
	}
	der, err := x509.CreateCertificate(rand.Reader, template, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return Pair{}, fmt.Errorf("issuing the certificate of %s: %w", name, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return Pair{}, fmt.Errorf("encoding the key of %s: %w", name, err)
	}
	p := Pair{
		CertPEM:  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:   pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		CertFile: filepath.Join(dir, name+".crt"),
		KeyFile:  filepath.Join(dir, name+".key"),
	}
	if err := os.WriteFile(p.CertFile, p.CertPEM, 0o600); err != nil {
		return Pair{}, fmt.Errorf("writing the certificate of %s: %w", name, err)
	}
	if err := os.WriteFile(p.KeyFile, p.KeyPEM, 0o600); err != nil {
		return Pair{}, fmt.Errorf("writing the key of %s: %w", name, err)
	}
	return p, nil
}
