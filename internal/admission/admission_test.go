package admission

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/configbutler/gitops-reverser/internal/facts"
)

type counts map[string]int

func (c counts) Reviewed(outcome string) { c[outcome]++ }

func review(kind string, op admissionv1.Operation, raw string) admission.Request {
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Kind:      metav1.GroupVersionKind{Group: "configbutler.ai", Version: "v1alpha3", Kind: kind},
		Operation: op,
		UserInfo: authnv1.UserInfo{Username: "alice", Groups: []string{"devs"},
			Extra: map[string]authnv1.ExtraValue{facts.ExtraEmail: {"alice@example.com"}}},
		Object: runtime.RawExtension{Raw: []byte(raw)},
	}}
}

func TestTheHandlerRecordsCommitRequestSubmittersAndAllowsEverything(t *testing.T) {
	seen := counts{}
	h := &Handler{Submitters: NewSubmitters(0, 0, nil), Observer: seen}
	for _, req := range []admission.Request{
		review("CommitRequest", admissionv1.Create, `{"metadata":{"uid":"u-1"}}`),
		review("CommitRequest", admissionv1.Update, `{"metadata":{"uid":"u-2"}}`),
		review("GitTarget", admissionv1.Create, `{"metadata":{"uid":"u-3"}}`),
		review("CommitRequest", admissionv1.Create, `{"metadata":{}}`),
		review("CommitRequest", admissionv1.Create, `not json`),
	} {
		require.True(t, h.Handle(context.Background(), req).Allowed, "a review never denies")
	}
	require.Equal(t, counts{OutcomeRecorded: 1, OutcomeIgnored: 2, OutcomeMalformed: 2}, seen)
	got, ok := h.Submitters.Submitter("u-1")
	require.True(t, ok)
	require.Equal(t, facts.Actor{Username: "alice", Groups: []string{"devs"}, Email: "alice@example.com"}, got)
	_, ok = h.Submitters.Submitter("u-2")
	require.False(t, ok)
}

func TestSubmittersAreForgottenAfterTheirTTL(t *testing.T) {
	c := clocktesting.NewFakeClock(time.Now())
	s := NewSubmitters(2, time.Minute, c)
	s.Record("a", facts.Actor{Username: "a"})
	s.Record("b", facts.Actor{Username: "b"})
	s.Record("c", facts.Actor{Username: "c"})
	_, ok := s.Submitter("a")
	require.False(t, ok, "beyond the bound the least recently used goes")
	c.Step(time.Minute + time.Second)
	_, ok = s.Submitter("c")
	require.False(t, ok)
}

func TestASelfSignedCertificateIsRenewedBeforeItExpiresAndBothCAsAreTrusted(t *testing.T) {
	c := clocktesting.NewFakeClock(time.Now())
	s := &SelfSigned{Host: "127.0.0.1", DNSNames: []string{"webhook.ops.svc"}, Clock: c, Validity: 48 * time.Hour, RenewBefore: 24 * time.Hour}
	_, err := s.GetCertificate(nil)
	require.Error(t, err, "nothing is served before the first certificate")
	require.NoError(t, s.Ensure(context.Background()))
	first, err := s.GetCertificate(nil)
	require.NoError(t, err)
	require.Equal(t, 1, pemBlocks(s.CABundle()))

	c.Step(22 * time.Hour) // the certificate runs 47 h: it starts an hour back

	require.NoError(t, s.Ensure(context.Background()))
	same, _ := s.GetCertificate(nil)
	require.True(t, first == same, "not due yet")

	c.Step(2 * time.Hour)
	require.NoError(t, s.Ensure(context.Background()))
	require.Equal(t, 2, pemBlocks(s.CABundle()), "the new CA is trusted before it is used")
	served, _ := s.GetCertificate(nil)
	require.True(t, first == served, "the renewal waits until the API server has had the new CA")
	verifies(t, served, s.CABundle(), "webhook.ops.svc", c.Now())

	require.NoError(t, s.Ensure(context.Background()))
	renewed, _ := s.GetCertificate(nil)
	require.False(t, first == renewed, "served from the next check")
	require.Equal(t, 2, pemBlocks(s.CABundle()), "the old CA stays trusted while the API server switches")
	verifies(t, renewed, s.CABundle(), "webhook.ops.svc", c.Now())
	require.NoError(t, s.Ensure(context.Background()))
	again, _ := s.GetCertificate(nil)
	require.True(t, renewed == again, "one renewal")
}

func pemBlocks(b []byte) int {
	n := 0
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			return n
		}
		n++
	}
}

func verifies(t *testing.T, cert *tls.Certificate, bundle []byte, name string, at time.Time) {
	t.Helper()
	pool := x509Pool(t, bundle)
	leaf, err := parse(cert)
	require.NoError(t, err)
	_, err = leaf.Verify(verifyOptions(pool, name, at))
	require.NoError(t, err)
}

func TestTheBundleKeepsOtherProcessesCAsBesideItsOwn(t *testing.T) {
	now := time.Now()
	cas := make([]*x509.Certificate, keepForeign+2)
	for i := range cas {
		// Issued a minute apart, oldest first.
		next, err := issue("webhook.ops.svc", nil, nil, now.Add(time.Duration(i-len(cas))*time.Minute), 3*time.Hour)
		require.NoError(t, err)
		cas[i] = next.ca
	}
	a, b := cas[0], cas[1]

	bundle, write := mergeBundle([]*x509.Certificate{a}, nil, now)
	require.True(t, write, "an empty bundle gets the CA")
	require.Equal(t, encodeCAs([]*x509.Certificate{a}), bundle)
	_, write = mergeBundle([]*x509.Certificate{a}, bundle, now)
	require.False(t, write, "nothing to change")

	bundle, write = mergeBundle([]*x509.Certificate{b}, bundle, now)
	require.True(t, write)
	require.Equal(t, encodeCAs([]*x509.Certificate{b, a}), bundle, "the new process adds its CA and keeps the old one's")
	_, write = mergeBundle([]*x509.Certificate{a}, bundle, now)
	require.False(t, write, "the old process finds its CA there and leaves the order alone")

	for _, ca := range cas[2:] {
		bundle, _ = mergeBundle([]*x509.Certificate{ca}, bundle, now)
	}
	newest := cas[len(cas)-1]
	kept := append([]*x509.Certificate{newest}, reversed(cas[1:len(cas)-1])...)
	require.Equal(t, encodeCAs(kept), bundle, "the newest others are kept, the oldest goes")

	garbled := append([]byte("not a certificate\n"), encodeCAs([]*x509.Certificate{newest, newest})...)
	bundle, write = mergeBundle([]*x509.Certificate{newest}, garbled, now)
	require.True(t, write)
	require.Equal(t, encodeCAs([]*x509.Certificate{newest}), bundle, "text that is no certificate, and a duplicate, are written away")
}

func reversed(cas []*x509.Certificate) []*x509.Certificate {
	out := append([]*x509.Certificate(nil), cas...)
	slices.Reverse(out)
	return out
}

// A CA expires with the certificate it signed, so one left by a process
// that is gone leaves the bundle in time.
func TestAnExpiredCAOfAnotherProcessIsDropped(t *testing.T) {
	now := time.Now()
	mine, err := issue("webhook.ops.svc", nil, nil, now, 48*time.Hour)
	require.NoError(t, err)
	gone, err := issue("webhook.ops.svc", nil, nil, now, 2*time.Hour)
	require.NoError(t, err)
	require.Equal(t, gone.expires, gone.ca.NotAfter)
	current := encodeCAs([]*x509.Certificate{gone.ca})
	_, write := mergeBundle([]*x509.Certificate{mine.ca}, append(encodeCAs([]*x509.Certificate{mine.ca}), current...), now)
	require.False(t, write, "still valid: kept")
	bundle, _ := mergeBundle([]*x509.Certificate{mine.ca}, current, now.Add(2*time.Hour))
	require.Equal(t, encodeCAs([]*x509.Certificate{mine.ca}), bundle)
}

func TestTheServingCertificateNamesEveryHostOnce(t *testing.T) {
	now := time.Now()
	ip := net.ParseIP("127.0.0.1")
	byIP, err := issue("127.0.0.1", []string{"webhook.ops.svc"}, []net.IP{ip}, now, 2*time.Hour)
	require.NoError(t, err)
	require.Len(t, byIP.pair.Leaf.IPAddresses, 1)
	require.Equal(t, []string{"webhook.ops.svc"}, byIP.pair.Leaf.DNSNames)
	byName, err := issue("webhook.ops.svc", []string{"webhook.ops.svc", "webhook"}, nil, now, 2*time.Hour)
	require.NoError(t, err)
	require.Equal(t, []string{"webhook.ops.svc", "webhook"}, byName.pair.Leaf.DNSNames)
	verifies(t, &byName.pair, encodeCAs([]*x509.Certificate{byName.ca}), "webhook", now)
}
