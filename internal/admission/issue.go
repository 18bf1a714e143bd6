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
// ips, both valid from an hour before now (clock skew) for validity, so a
// CA left in a bundle by a process long gone expires with its certificate.
// The keys are ECDSA P-256: client-go's GenerateSelfSignedCertKey makes two
// RSA 2048 keys (0.18 s against 0.5 ms on a two-core node, before the
// manager starts) and its NewSelfSignedCACert a CA of ten years, so both
// are made here with crypto/x509.
func issue(host string, dnsNames []string, ips []net.IP, now time.Time, validity time.Duration) (*issued, error) {
	notBefore, notAfter := now.Add(-time.Hour), now.Add(-time.Hour).Add(validity)
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the CA key: %w", err)
	}
	caSerial, err := serialNumber()
	if err != nil {
		return nil, err
	}
	caTemplate := &x509.Certificate{
		SerialNumber:          caSerial,
		Subject:               pkix.Name{CommonName: fmt.Sprintf("gitops-reverser-admission-ca@%d", now.Unix())},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("creating the CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("reading the CA certificate: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the serving key: %w", err)
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, err
	}
	template := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: host},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
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

// serialNumber is a random positive serial.
func serialNumber() (*big.Int, error) {
	serial, err := rand.Int(rand.Reader, big.NewInt(math.MaxInt64))
	if err != nil {
		return nil, fmt.Errorf("choosing a serial number: %w", err)
	}
	return serial.Add(serial, big.NewInt(1)), nil
}
