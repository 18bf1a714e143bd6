package operator

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAttributionOptionsNameTheFlagThatIsMissing(t *testing.T) {
	valid := func() AttributionOptions {
		return AttributionOptions{ListenAddr: ":9444", CertFile: "tls.crt", KeyFile: "tls.key", ClientCAFile: "ca.crt",
			Transport: TransportMemory, Replicas: 1}
	}
	for _, tc := range []struct {
		name   string
		change func(*AttributionOptions)
		want   string
	}{
		{"complete", func(*AttributionOptions) {}, ""},
		{"insecure needs no CA", func(a *AttributionOptions) { a.ClientCAFile, a.Insecure = "", true }, ""},
		{"no serving certificate", func(a *AttributionOptions) { a.CertFile = "" }, "--audit-cert-file"},
		{"no client CA", func(a *AttributionOptions) { a.ClientCAFile = "" }, "--audit-client-ca-file"},
		{"no address", func(a *AttributionOptions) { a.ListenAddr = "" }, "--audit-bind-address"},
		{"memory with two replicas", func(a *AttributionOptions) { a.Replicas = 2 }, "refused with 2 replicas"},
		{"redis without Redis", func(a *AttributionOptions) { a.Transport = TransportRedis }, "needs --redis-addr"},
		{"unknown transport", func(a *AttributionOptions) { a.Transport = "kafka" }, `"kafka"`},
		{"unknown source", func(a *AttributionOptions) { a.Source = "logs" }, "--author-attribution-source"},
		{"admission without the observer's configuration", func(a *AttributionOptions) { a.Source = SourceAdmission },
			"--admission-observer-configuration"},
		{"admission alone needs no audit ingress", func(a *AttributionOptions) {
			*a = AttributionOptions{Transport: TransportMemory, Replicas: 1, Source: SourceAdmission,
				Observer: &ObserverOptions{WebhookConfiguration: "observer", ServiceName: "svc", ServiceNamespace: "ns"}}
		}, ""},
		{"both still need the audit ingress", func(a *AttributionOptions) {
			a.Source, a.CertFile = SourceBoth, ""
			a.Observer = &ObserverOptions{WebhookConfiguration: "observer", URL: "https://127.0.0.1:9443"}
		}, "--audit-cert-file"},
		{"an observer with a Service and a URL", func(a *AttributionOptions) {
			a.Source = SourceBoth
			a.Observer = &ObserverOptions{WebhookConfiguration: "observer", ServiceName: "svc", ServiceNamespace: "ns", URL: "https://x"}
		}, "exactly one of a Service"},
		{"an observer timeout over two seconds", func(a *AttributionOptions) {
			a.Source = SourceAdmission
			a.Observer = &ObserverOptions{WebhookConfiguration: "observer", URL: "https://x", TimeoutSeconds: 5}
		}, "--admission-observer-timeout-seconds 5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := valid()
			tc.change(&a)
			err := a.check(false)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestTheRedisTransportIsTheDefaultWhereRedisIsConfigured(t *testing.T) {
	for _, tc := range []struct {
		name, flag string
		hasRedis   bool
		want       string
	}{
		{"default with Redis", "", true, TransportRedis},
		{"default without Redis", "", false, TransportMemory},
		{"memory asked for with Redis", TransportMemory, true, TransportMemory},
		{"redis asked for", TransportRedis, true, TransportRedis},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := AttributionOptions{ListenAddr: ":9444", CertFile: "tls.crt", KeyFile: "tls.key", Insecure: true,
				Transport: tc.flag, Replicas: 2}
			a.resolveTransport(tc.hasRedis)
			require.Equal(t, tc.want, a.Transport)
			if tc.want == TransportRedis {
				require.NoError(t, a.check(tc.hasRedis), "the Redis transport serves any number of replicas")
			}
		})
	}
}

func TestTheAdmissionSourceNeedsTheWebhookServer(t *testing.T) {
	o := Options{Attribution: &AttributionOptions{Transport: TransportMemory, Replicas: 1, Source: SourceAdmission,
		Observer: &ObserverOptions{WebhookConfiguration: "observer", URL: "https://127.0.0.1:9443"}}}
	require.ErrorContains(t, checkOptions(&o), "needs --admission-webhook-port")
	o.Admission = &AdmissionOptions{Port: 9443, ServiceHost: "127.0.0.1"}
	require.NoError(t, checkOptions(&o))
}
