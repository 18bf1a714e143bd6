package admission

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"slices"
	"time"
)

// keepForeign is how many CAs of other processes a bundle keeps beside a
// process's own: the old pod of a rolling update, another replica, and
// the CAs of restarts before them, which expire with their certificates.
// Enough that a pod restarting over and over does not push a live one's
// out; a bundle of ten is about 6 KB.
const keepForeign = 8

// mergeBundle is the caBundle a process with the CAs own writes over
// current, and whether it differs from current (as a set of CAs, so two
// processes that each hold the other's CA do not rewrite it in turn).
//
// The merged bundle is own, then the newest keepForeign other CAs of
// current that are still valid at now. Each process adds itself and none
// removes another's, so during a rolling update the API server trusts the
// old pod, still serving, and the new one. A CA whose process has exited
// stays until newer ones push it out: its key lived in that process's
// memory only, so trusting it lets nobody in. Text that is not a
// certificate is dropped.
func mergeBundle(own []*x509.Certificate, current []byte, now time.Time) ([]byte, bool) {
	present := decodeCAs(current)
	var foreign []*x509.Certificate
	for _, ca := range present {
		if !containsCA(own, ca) && !containsCA(foreign, ca) && !now.After(ca.NotAfter) {
			foreign = append(foreign, ca)
		}
	}
	slices.SortStableFunc(foreign, func(a, b *x509.Certificate) int { return b.NotBefore.Compare(a.NotBefore) })
	merged := append(append([]*x509.Certificate(nil), own...), foreign[:min(len(foreign), keepForeign)]...)
	// Unchanged only when current is exactly those certificates: text that
	// is not one, or a duplicate, is written away.
	if sameCAs(merged, present) && bytes.Equal(current, encodeCAs(present)) {
		return current, false
	}
	return encodeCAs(merged), true
}

// sameCAs reports whether a and b hold the same certificates, in any order.
func sameCAs(a, b []*x509.Certificate) bool {
	if len(a) != len(b) {
		return false
	}
	for _, ca := range a {
		if !containsCA(b, ca) {
			return false
		}
	}
	return true
}

func containsCA(cas []*x509.Certificate, ca *x509.Certificate) bool {
	return slices.ContainsFunc(cas, func(c *x509.Certificate) bool { return c.Equal(ca) })
}

// decodeCAs is every certificate in a PEM bundle; blocks that are not
// certificates are skipped.
func decodeCAs(bundle []byte) []*x509.Certificate {
	var out []*x509.Certificate
	for {
		var block *pem.Block
		block, bundle = pem.Decode(bundle)
		if block == nil {
			return out
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		if ca, err := x509.ParseCertificate(block.Bytes); err == nil {
			out = append(out, ca)
		}
	}
}

func encodeCAs(cas []*x509.Certificate) []byte {
	var out []byte
	for _, ca := range cas {
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw})...)
	}
	return out
}
