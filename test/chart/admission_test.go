package chart

import (
	"crypto/x509"
	"testing"

	"github.com/go-logr/logr/testr"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/configbutler/gitops-reverser/internal/admission"
)

// TestTheChartsRBACLetsTheOperatorKeepItsWebhookCA applies the rendered
// ValidatingWebhookConfiguration for real and keeps its caBundle as the
// chart's ServiceAccount, as the operator does without cert-manager.
func TestTheChartsRBACLetsTheOperatorKeepItsWebhookCA(t *testing.T) {
	const release, ns, sa = "adm", "admission-rbac", "adm-gitops-reverser"
	objs := render(t, release, ns, "")
	install(t, objs)
	vwc := oneOfKind(t, objs, "ValidatingWebhookConfiguration")
	applyObject(t, vwc, false)
	t.Cleanup(func() { _ = env.kube.Client().Delete(ctx(t), vwc) })

	asSA, err := client.New(env.kube.ConfigAsServiceAccount(ns, sa), client.Options{Scheme: env.kube.Scheme()})
	require.NoError(t, err)
	certs := &admission.SelfSigned{Host: "adm-gitops-reverser-admission." + ns + ".svc", Webhook: vwc.GetName(), Client: asSA,
		Log: testr.New(t)}
	require.NoError(t, certs.Ensure(ctx(t)))

	read := func() admissionregistrationv1.ValidatingWebhookConfiguration {
		var got admissionregistrationv1.ValidatingWebhookConfiguration
		require.NoError(t, env.kube.Client().Get(ctx(t), client.ObjectKey{Name: vwc.GetName()}, &got))
		return got
	}
	require.Equal(t, certs.CABundle(), read().Webhooks[0].ClientConfig.CABundle)

	// A rolling update: the new pod issues its own CA while the old one
	// still serves. Both are trusted, and neither rewrites the bundle on
	// its next check.
	next := &admission.SelfSigned{Host: certs.Host, Webhook: vwc.GetName(), Client: asSA, Log: testr.New(t)}
	require.NoError(t, next.Ensure(ctx(t)))
	both := read()
	for _, pod := range []*admission.SelfSigned{certs, next} {
		serving, err := pod.GetCertificate(nil)
		require.NoError(t, err)
		leaf, err := x509.ParseCertificate(serving.Certificate[0])
		require.NoError(t, err)
		pool := x509.NewCertPool()
		require.True(t, pool.AppendCertsFromPEM(both.Webhooks[0].ClientConfig.CABundle))
		_, err = leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: certs.Host})
		require.NoError(t, err, "the bundle trusts each pod's serving certificate")
	}
	require.NoError(t, certs.Ensure(ctx(t)))
	require.NoError(t, next.Ensure(ctx(t)))
	require.Equal(t, both.ResourceVersion, read().ResourceVersion, "the two pods agree on the bundle")
}
