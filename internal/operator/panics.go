package operator

import (
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"

	ctrl "sigs.k8s.io/controller-runtime"
)

// guardPanics serves h and decides what a panic in it does. net/http
// recovers a handler's panic into a line on the server's error log, which
// no test reads, so on its own a panicking audit ingress or admission
// webhook would fail no test. With recoverPanic (a running operator) the
// panic is logged with its stack and answered 500, as net/http would, so
// the API server retries the batch and the process keeps serving. Without
// it (every test that starts the operator) the panic is raised again on a
// goroutine of its own, where nothing can recover it: the process crashes
// and the run fails, as a panicking reconcile does (Options.RecoverPanic).
func guardPanics(server string, h http.Handler, recoverPanic bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if err, ok := v.(error); ok && errors.Is(err, http.ErrAbortHandler) {
				panic(v) // net/http's own way to abort a response, not a fault
			}
			msg := fmt.Sprintf("%s: panic serving %s %s: %v\n%s", server, r.Method, r.URL.Path, v, debug.Stack())
			if !recoverPanic {
				go panic(msg)
				select {} // the process is going down; keep the response open until it does
			}
			ctrl.Log.WithName(server).Error(errors.New(msg), "recovered a panic")
			http.Error(w, "internal error", http.StatusInternalServerError)
		}()
		h.ServeHTTP(w, r)
	})
}
