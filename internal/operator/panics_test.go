package operator

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"
)

func panicking(calls *int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*calls++
		if r.URL.Path == "/panic" {
			panic("the handler's bug")
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

// TestARecoveredPanicIsAnswered500AndTheServerGoesOn: a running operator
// answers a panicking request 500 (the API server retries) and serves the
// next one.
func TestARecoveredPanicIsAnswered500AndTheServerGoesOn(t *testing.T) {
	var calls int
	srv := httptest.NewServer(guardPanics("audit-ingress", panicking(&calls), true))
	t.Cleanup(srv.Close)

	resp, err := http.Get(srv.URL + "/panic")
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	resp, err = http.Get(srv.URL + "/fine")
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	require.Equal(t, 2, calls)
}

// crashChildEnv makes the test binary, run again as a child, serve a
// panicking request without recovery.
const crashChildEnv = "GITOPS_REVERSER_GUARD_PANICS_CHILD"

// TestAPanicInAGuardedHandlerFailsTheRun: without RecoverPanic (every
// test that starts the operator) a panic in the audit ingress or the
// admission webhook crashes the process, where net/http alone would have
// logged it and gone on, failing no test. The child is this test binary.
func TestAPanicInAGuardedHandlerFailsTheRun(t *testing.T) {
	if os.Getenv(crashChildEnv) == "1" {
		var calls int
		srv := httptest.NewServer(guardPanics("admission", panicking(&calls), false))
		resp, err := http.Get(srv.URL + "/panic")
		if err == nil {
			_ = resp.Body.Close()
		}
		os.Exit(0) // not reached: the panic ends the process first
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestAPanicInAGuardedHandlerFailsTheRun$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "the child survived the panic:\n%s", out)
	require.NotZero(t, exit.ExitCode())
	require.Contains(t, string(out), "admission: panic serving GET /panic: the handler's bug")
}
