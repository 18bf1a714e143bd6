package admission

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math"
	"math/big"
	"net"
	"slices"
	"time"

	certutil "k8s.io/client-go/util/cert"
)

// issued is one generation of the self-issued certificate: the serving
// pair and the CA that signed it.
type issued struct {
	pair tls.Certificate
	ca   *x509.Certificate
	// expires is the serving certificate's NotAfter.
	expires time.Time
}

// issue generates a CA and a serving certificate for host, dnsNames and
// ips, valid from an hour before now (clock skew) for validity. The keys
// are ECDSA P-256: client-go's GenerateSelfSignedCertKey makes two RSA
// 2048 keys, about 0.15–0.3 s on a small node, and the first certificate
// is issued before the manager starts. The CA comes from client-go's
// helper; the serving certificate, which it has no helper for, from
// crypto/x509.
func issue(host string, dnsNames []string, ips []net.IP, now time.Time, validity time.Duration) (*issued, error) {
	notBefore := now.Add(-time.Hour)
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the CA key: %w", err)
	}
	ca, err := certutil.NewSelfSignedCACert(certutil.Config{
		CommonName: fmt.Sprintf("gitops-reverser-admission-ca@%d", now.Unix()), NotBefore: notBefore}, caKey)
	if err != nil {
		return nil, fmt.Errorf("creating the CA certificate: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the serving key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(math.MaxInt64))
	if err != nil {
		return nil, fmt.Errorf("choosing a serial number: %w", err)
	}
	template := &x509.Certificate{
		SerialNumber:          serial.Add(serial, big.NewInt(1)),
		Subject:               pkix.Name{CommonName: host},
		NotBefore:             notBefore,
		NotAfter:              notBefore.Add(validity),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		DNSNames:              dnsNames,
		IPAddresses:           ips,
	}
	if ip := net.ParseIP(host); ip != nil {
		if !slices.ContainsFunc(ips, ip.Equal) {
			template.IPAddresses = append([]net.IP{ip}, ips...)
		}
	} else if host != "" && !slices.Contains(dnsNames, host) {
		template.DNSNames = append([]string{host}, dnsNames...)
	}
	der, err := x509.CreateCertificate(rand.Reader, template, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("signing the serving certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("reading the serving certificate: %w", err)
	}
	return &issued{
		pair:    tls.Certificate{Certificate: [][]byte{der, ca.Raw}, PrivateKey: key, Leaf: leaf},
		ca:      ca,
		expires: leaf.NotAfter,
	}, nil
}
