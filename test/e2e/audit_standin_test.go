package e2e

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/operator"
	"github.com/configbutler/gitops-reverser/test/harness"
)

// postedEvent is one audit event the API server posted: the fields a test
// picks it by, and the event as sent.
type postedEvent struct {
	Verb      string `json:"verb"`
	Stage     string `json:"stage"`
	ObjectRef *struct {
		Resource  string `json:"resource"`
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"objectRef"`
	raw json.RawMessage
}

// standInIngress listens on the suite's audit address in the operator's
// place, with the ingress's certificates and client CA: the API server's
// posts reach it over the same mTLS. It records every event and answers
// every post with status.
type standInIngress struct {
	server *http.Server
	status int

	mu     sync.Mutex
	events []postedEvent
}

// startStandIn serves the suite's audit address until stop (or the end of
// the test).
func startStandIn(t *testing.T, status int) *standInIngress {
	t.Helper()
	s := &standInIngress{status: status}
	s.server = &http.Server{Handler: http.HandlerFunc(s.record), TLSConfig: ingressTLS(t), ReadHeaderTimeout: 10 * time.Second}
	ln := listenOnAuditAddr(t)
	go func() { _ = s.server.ServeTLS(ln, "", "") }()
	t.Cleanup(s.stop)
	return s
}

// listenOnAuditAddr listens on the suite's audit address, again while an
// outgoing connection of another process holds it as its local port (the
// address is a loopback port picked at the suite's start).
func listenOnAuditAddr(t *testing.T) net.Listener {
	t.Helper()
	var ln net.Listener
	eventually(t, "listening on "+env.audit.addr, func() bool {
		var err error
		ln, err = net.Listen("tcp", env.audit.addr)
		return err == nil
	})
	return ln
}

// ingressTLS is the server side of the suite's audit mTLS.
func ingressTLS(t *testing.T) *tls.Config {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(env.audit.certFile, env.audit.keyFile)
	require.NoError(t, err)
	caPEM, err := os.ReadFile(env.audit.clientCAFile)
	require.NoError(t, err)
	clients := x509.NewCertPool()
	require.True(t, clients.AppendCertsFromPEM(caPEM))
	return &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: clients,
		ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}
}

func (s *standInIngress) record(w http.ResponseWriter, r *http.Request) {
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.NewDecoder(r.Body).Decode(&list); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	for _, item := range list.Items {
		var ev postedEvent
		if json.Unmarshal(item, &ev) == nil && ev.ObjectRef != nil {
			ev.raw = item
			s.events = append(s.events, ev)
		}
	}
	s.mu.Unlock()
	w.WriteHeader(s.status)
}

// event is the ResponseComplete event of verb on the ConfigMap ns/name the
// API server posted, and how many times it posted it.
func (s *standInIngress) event(verb, ns, name string) (json.RawMessage, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var first json.RawMessage
	posts := 0
	for _, ev := range s.events {
		ref := ev.ObjectRef
		if ev.Verb == verb && ev.Stage == "ResponseComplete" && ref.Resource == "configmaps" && ref.Namespace == ns && ref.Name == name {
			if first == nil {
				first = ev.raw
			}
			posts++
		}
	}
	return first, posts
}

// waitForEvent waits until the API server has posted the event (see event).
func (s *standInIngress) waitForEvent(t *testing.T, verb, ns, name string) json.RawMessage {
	t.Helper()
	var ev json.RawMessage
	eventually(t, fmt.Sprintf("the API server posting the %s of %s/%s", verb, ns, name), func() bool {
		ev, _ = s.event(verb, ns, name)
		return ev != nil
	})
	return ev
}

// stop closes the listener and every connection: the API server's next
// post is refused.
func (s *standInIngress) stop() { _ = s.server.Close() }

// forwardAudit relays TCP from the suite's audit address to the ingress at
// to, until the end of the test: the API server's TLS session ends at that
// ingress, as if it listened on the suite's address itself.
func forwardAudit(t *testing.T, to string) {
	t.Helper()
	ln := listenOnAuditAddr(t)
	var mu sync.Mutex
	var conns []net.Conn
	track := func(c net.Conn) {
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
	}
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", to)
			if err != nil {
				_ = in.Close()
				continue
			}
			track(in)
			track(out)
			go func() { _, _ = io.Copy(out, in); _ = out.Close() }()
			go func() { _, _ = io.Copy(in, out); _ = in.Close() }()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
}

// postAudit posts events as one EventList to the ingress at addr under
// route, as the API server would (its client certificate, the serving
// CA); it returns the answer's status.
func postAudit(t *testing.T, addr, route string, events ...json.RawMessage) int {
	t.Helper()
	status, err := tryPostAudit(addr, route, events...)
	require.NoError(t, err)
	return status
}

// tryPostAudit is postAudit for an ingress that may not listen yet.
func tryPostAudit(addr, route string, events ...json.RawMessage) (int, error) {
	cert, err := tls.X509KeyPair(env.audit.apiserverClient.CertPEM, env.audit.apiserverClient.KeyPEM)
	if err != nil {
		return 0, err
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(env.audit.servingCA)
	httpClient := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: roots, MinVersion: tls.VersionTLS12}}}
	body, err := json.Marshal(map[string]any{"apiVersion": "audit.k8s.io/v1", "kind": "EventList", "metadata": map[string]any{}, "items": events})
	if err != nil {
		return 0, err
	}
	resp, err := httpClient.Post("https://"+addr+"/audit-webhook/"+route, "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// ingressElsewhere is a loopback address other than the suite's audit
// address: an operator whose ingress listens there hears from the API
// server only what the test relays to it.
func ingressElsewhere(t *testing.T) string {
	t.Helper()
	port, err := harness.FreePort()
	require.NoError(t, err)
	return fmt.Sprintf("127.0.0.1:%d", port)
}

// withIngressAt is withAttribution with the ingress listening on addr.
func withIngressAt(addr string, grace time.Duration) func(*operator.Options) {
	return func(o *operator.Options) {
		withAttribution(grace)(o)
		o.Attribution.ListenAddr = addr
	}
}
