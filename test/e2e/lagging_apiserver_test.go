package e2e

import (
	"bytes"
	"context"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
)

// initialEventsEnd marks the bookmark that ends a watch's initial state
// (a watch list: sendInitialEvents=true).
const initialEventsEnd = "k8s.io/initial-events-end"

// laggingAPIServer stands between one operator and the suite's API
// server: everything passes, except that the operator's watches of
// GitTargets deliver their initial state and then nothing until release.
// The operator's cache of GitTargets stays as it was at start, however
// the API server's copy changes meanwhile, for as long as the test needs.
type laggingAPIServer struct {
	server      *httptest.Server
	release     func()
	releasedCtx context.Context
}

func startLaggingAPIServer(t *testing.T) *laggingAPIServer {
	t.Helper()
	upstream := env.kube.Config()
	target, err := url.Parse(upstream.Host)
	require.NoError(t, err)
	transport, err := rest.TransportFor(upstream)
	require.NoError(t, err)
	released, release := context.WithCancel(context.Background())
	l := &laggingAPIServer{release: release, releasedCtx: released}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			// Uncompressed, so the end of a watch's initial state can be seen.
			r.Out.Header.Del("Accept-Encoding")
		},
		Transport:     transport,
		FlushInterval: -1,
		ModifyResponse: func(resp *http.Response) error {
			if isGitTargetWatch(resp.Request) {
				resp.Body = &heldWatch{body: resp.Body, released: released, request: resp.Request.Context(),
					passing: resp.Request.URL.Query().Get("sendInitialEvents") == "true"}
			}
			return nil
		},
	}
	l.server = httptest.NewTLSServer(proxy)
	t.Cleanup(func() {
		release()
		l.server.Close()
	})
	return l
}

func isGitTargetWatch(r *http.Request) bool {
	q := r.URL.Query()
	return (q.Get("watch") == "true" || q.Get("watch") == "1") && strings.HasSuffix(r.URL.Path, "/gittargets")
}

// config is a REST config for the operator: admin rights, through the
// proxy.
func (l *laggingAPIServer) config() *rest.Config {
	cfg := rest.AnonymousClientConfig(env.kube.Config())
	cfg.Host = l.server.URL
	cfg.TLSClientConfig = rest.TLSClientConfig{
		CAData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: l.server.Certificate().Raw})}
	return cfg
}

// heldWatch passes a watch response's initial state (when it has one) and
// holds the rest until released.
type heldWatch struct {
	body     io.ReadCloser
	released context.Context
	request  context.Context
	mu       sync.Mutex
	passing  bool
	tail     []byte
}

func (h *heldWatch) Read(p []byte) (int, error) {
	h.mu.Lock()
	passing := h.passing
	h.mu.Unlock()
	if !passing {
		select {
		case <-h.released.Done():
		case <-h.request.Done():
			return 0, h.request.Err()
		}
	}
	n, err := h.body.Read(p)
	if passing {
		// The marker may straddle two reads: look at the end of the last one too.
		seen := append(h.tail, p[:n]...)
		if bytes.Contains(seen, []byte(initialEventsEnd)) {
			h.mu.Lock()
			h.passing = false
			h.mu.Unlock()
		}
		h.tail = append([]byte(nil), seen[max(0, len(seen)-len(initialEventsEnd)):]...)
	}
	return n, err
}

func (h *heldWatch) Close() error { return h.body.Close() }
