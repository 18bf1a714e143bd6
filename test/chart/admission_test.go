package chart

import (
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

	var got admissionregistrationv1.ValidatingWebhookConfiguration
	require.NoError(t, env.kube.Client().Get(ctx(t), client.ObjectKey{Name: vwc.GetName()}, &got))
	require.Equal(t, certs.CABundle(), got.Webhooks[0].ClientConfig.CABundle)
}
