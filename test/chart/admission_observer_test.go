package chart

// The admission observer in the chart: attribution.source admission or
// both renders the observer's flags, its (empty) webhook configuration and
// the RBAC that lets the operator write it; admission alone renders none
// of the audit ingress.

import (
	"strings"
	"testing"

	"github.com/go-logr/logr/testr"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/admission"
	"github.com/configbutler/gitops-reverser/internal/admission/observer"
	"github.com/configbutler/gitops-reverser/internal/rules"
)

const admissionSource = "attribution: {enabled: true, source: admission}\n"

func TestAdmissionSourceRendersTheObserverAndNoAuditIngress(t *testing.T) {
	objs := render(t, "gr", "gitops-reverser", admissionSource)
	args := containerArgs(t, objs)
	for _, want := range []string{"--author-attribution=true", "--author-attribution-source=admission",
		"--admission-observer-configuration=gr-gitops-reverser-observer", "--admission-observer-service=gr-gitops-reverser-admission",
		"--admission-observer-timeout-seconds=2", "--admission-webhook-port=9443"} {
		require.Contains(t, args, want)
	}
	for _, a := range args {
		require.False(t, strings.HasPrefix(a, "--audit-"), "no audit ingress flag: %s", a)
	}
	require.NotContains(t, containerPortNames(t, objs), "audit")
	for _, o := range objs {
		require.NotContains(t, o.GetName(), "audit", "%s %s", o.GetKind(), o.GetName())
	}
	observerConfig := named(t, objs, "ValidatingWebhookConfiguration", "gr-gitops-reverser-observer")
	_, hasWebhooks := observerConfig.Object["webhooks"]
	require.False(t, hasWebhooks, "the operator writes the webhooks; an upgrade must not take them away")
}

func TestBothSourcesRenderTheAuditIngressAndTheObserver(t *testing.T) {
	objs := render(t, "gr", "gitops-reverser", "attribution: {enabled: true, source: both}\n")
	args := containerArgs(t, objs)
	require.Contains(t, args, "--author-attribution-source=both")
	require.Contains(t, args, "--audit-bind-address=:9444")
	require.Contains(t, args, "--admission-observer-configuration=gr-gitops-reverser-observer")
	require.Contains(t, containerPortNames(t, objs), "audit")
	named(t, objs, "Service", "gr-gitops-reverser-audit")
	named(t, objs, "ValidatingWebhookConfiguration", "gr-gitops-reverser-observer")
}

func TestTheAuditSourceRendersNoObserver(t *testing.T) {
	objs := render(t, "gr", "gitops-reverser", attributionOn)
	require.Contains(t, containerArgs(t, objs), "--author-attribution-source=audit")
	require.Len(t, byKind(objs, "ValidatingWebhookConfiguration"), 1, "only the operator's own")
	for _, a := range containerArgs(t, objs) {
		require.False(t, strings.HasPrefix(a, "--admission-observer-"), "no observer flag: %s", a)
	}
}

// TestTheWebhookPortIsThePodsPort: the API server connects to the Pod's
// port, so a GKE private cluster (control plane to nodes on 443 and 10250
// only) serves the webhooks on 10250.
func TestTheWebhookPortIsThePodsPort(t *testing.T) {
	objs := render(t, "gr", "gitops-reverser", "admission: {port: 10250}\n"+admissionSource)
	require.Contains(t, containerArgs(t, objs), "--admission-webhook-port=10250")
	for _, p := range operatorContainer(t, objs)["ports"].([]any) {
		if port := p.(map[string]any); port["name"] == "admission" {
			require.EqualValues(t, 10250, port["containerPort"])
		}
	}
}

func TestTheObserverRefusesToRender(t *testing.T) {
	cases := []struct{ name, values, want string }{
		{"without the admission webhook", "admission: {enabled: false}\n" + admissionSource,
			"attribution.source=admission serves the admission observer on the operator's webhook server: it needs admission.enabled=true"},
		{"an unknown source", "attribution: {enabled: true, source: webhook}\n", "at '/attribution/source'"},
		{"a timeout over two seconds", "attribution: {enabled: true, source: admission, admission: {timeoutSeconds: 3}}\n",
			"at '/attribution/admission/timeoutSeconds'"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := helm(t, append([]string{"template", "gr", chartDir()}, valuesFile(t, tc.values)...)...)
			require.Error(t, err, "rendered:\n%s", out)
			require.Contains(t, out, tc.want)
		})
	}
}

// TestTheChartsRBACLetsTheOperatorRegisterTheObserver applies the rendered
// configurations for real and registers the observer as the chart's
// ServiceAccount, as the operator does: its webhooks written, with the
// caBundle of the operator's own configuration.
func TestTheChartsRBACLetsTheOperatorRegisterTheObserver(t *testing.T) {
	const release, ns, sa = "obs", "observer-rbac", "obs-gitops-reverser"
	objs := render(t, release, ns, admissionSource)
	install(t, objs)
	asSA, err := client.New(env.kube.ConfigAsServiceAccount(ns, sa), client.Options{Scheme: env.kube.Scheme()})
	require.NoError(t, err)
	for _, vwc := range byKind(objs, "ValidatingWebhookConfiguration") {
		applyObject(t, vwc, false)
		t.Cleanup(func() { _ = env.kube.Client().Delete(ctx(t), vwc) })
	}
	certs := &admission.SelfSigned{Host: "obs-gitops-reverser-admission." + ns + ".svc", Webhook: "obs-gitops-reverser", Client: asSA,
		Log: testr.New(t)}
	require.NoError(t, certs.Ensure(ctx(t)))

	claims := []rules.Claim{{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Namespace: "team-a",
		Operations: []v1alpha3.OperationType{v1alpha3.OperationCreate, v1alpha3.OperationUpdate, v1alpha3.OperationDelete}}}
	port := int32(443)
	registrar := observer.NewRegistrar(observer.Registrar{Client: asSA, Name: "obs-gitops-reverser-observer", CABundleFrom: "obs-gitops-reverser",
		Spec: observer.WebhookSpec{ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
			Namespace: ns, Name: "obs-gitops-reverser-admission", Port: &port}}},
		Claims: func() []rules.Claim { return claims }, Log: testr.New(t)})
	require.NoError(t, registrar.Sync(ctx(t), true))

	var got admissionregistrationv1.ValidatingWebhookConfiguration
	require.NoError(t, env.kube.Client().Get(ctx(t), client.ObjectKey{Name: "obs-gitops-reverser-observer"}, &got))
	require.Len(t, got.Webhooks, 1)
	require.Equal(t, certs.CABundle(), got.Webhooks[0].ClientConfig.CABundle)
	require.Equal(t, observer.Path, *got.Webhooks[0].ClientConfig.Service.Path)
	require.Equal(t, []string{"configmaps"}, got.Webhooks[0].Rules[0].Resources)

	// The periodic resync writes the same webhooks again: the API server
	// stores nothing new.
	require.NoError(t, registrar.Sync(ctx(t), true))
	var again admissionregistrationv1.ValidatingWebhookConfiguration
	require.NoError(t, env.kube.Client().Get(ctx(t), client.ObjectKey{Name: "obs-gitops-reverser-observer"}, &again))
	require.Equal(t, got.ResourceVersion, again.ResourceVersion, "a resync that changes nothing is no write")
}

// With the memory transport only the Pod that commits may serve the
// observer, so a rollout stops the old Pod first; with Redis the other
// Pod's reviews come through, and the rollout surges as usual.
func TestTheObserverWithoutRedisRollsOutByRecreate(t *testing.T) {
	strategy := func(values string) string {
		d := named(t, render(t, "gr", "gitops-reverser", values), "Deployment", "gr-gitops-reverser")
		s, _, err := unstructured.NestedString(d.Object, "spec", "strategy", "type")
		require.NoError(t, err)
		return s
	}
	require.Equal(t, "Recreate", strategy(admissionSource))
	require.Equal(t, "RollingUpdate", strategy(admissionSource+"redis: {addr: \"redis:6379\"}\n"))
	require.Equal(t, "RollingUpdate", strategy(attributionOn))
}
