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
		{"redis not built yet", func(a *AttributionOptions) { a.Transport = TransportRedis }, "not available yet"},
		{"unknown transport", func(a *AttributionOptions) { a.Transport = "kafka" }, `"kafka"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := valid()
			tc.change(&a)
			err := a.check()
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.want)
		})
	}
}
