package operator

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"

	"github.com/configbutler/gitops-reverser/internal/redisconn"
	"github.com/configbutler/gitops-reverser/test/harness"
)

// TestBadFlagsAreReportedBeforeWaitingForTheAPIServer: with no API server
// answering, the operator waits for one; a flag it can refuse on its own
// must be refused first, not after the API server comes back (or never).
func TestBadFlagsAreReportedBeforeWaitingForTheAPIServer(t *testing.T) {
	port, err := harness.FreePort()
	require.NoError(t, err)
	nowhere := &rest.Config{Host: "https://127.0.0.1:" + strconv.Itoa(port)}
	for _, tc := range []struct {
		name, says string
		tune       func(*Options)
	}{
		{"a Redis URL that does not parse", "--redis-addr", func(o *Options) {
			o.Redis = &redisconn.Options{Addr: "redis://ops:s3cret@redis:6379/notanumber"}
		}},
		{"a Redis scheme that is none", "want redis://, rediss:// or host:port", func(o *Options) {
			o.Redis = &redisconn.Options{Addr: "http://redis:6379"}
		}},
		{"a Redis CA without TLS", "--redis-ca-file", func(o *Options) {
			o.Redis = &redisconn.Options{Addr: "redis://redis:6379", CAFile: "/ca.pem"}
		}},
		{"a Redis password file that is not there", "Redis password file", func(o *Options) {
			o.Redis = &redisconn.Options{Addr: "redis:6379", PasswordFile: t.TempDir() + "/missing"}
		}},
		{"an admission webhook without a port", "admission webhook", func(o *Options) {
			o.Admission = &AdmissionOptions{ServiceHost: "gitops-reverser.svc"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The deadline only bounds a failing run: one that waits for
			// the API server would return nil when it ends.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			o := Options{Config: nowhere, MetricsAddr: "0", ProbeAddr: "127.0.0.1:0", Registry: prometheus.NewRegistry(), SkipNameValidation: true}
			tc.tune(&o)
			err := Run(ctx, o)
			require.Error(t, err, "the bad flag was not reported while the API server did not answer")
			require.ErrorContains(t, err, tc.says)
			require.NotContains(t, err.Error(), "s3cret")
		})
	}
}
