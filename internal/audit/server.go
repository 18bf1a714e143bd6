package audit

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"
)

// shutdownGrace is how long a stopping server lets requests in flight
// finish: long enough to publish a batch, short enough for a rollout.
const shutdownGrace = 10 * time.Second

// Server serves a Handler over TLS. With mTLS (the default) it requires a
// client certificate signed by ClientCAs: that authenticates membership in
// the audit CA's client set, not which provider sent the batch.
//
// It is a controller-runtime Runnable that runs on every replica (every
// replica takes audit batches; the facts reach the watch through the
// transport).
type Server struct {
	// Addr is the address Start listens on, e.g. ":9444".
	Addr string
	// Handler serves the requests, normally a *Handler.
	Handler http.Handler
	// GetCertificate returns the serving certificate; a certwatcher's
	// GetCertificate reloads it when its files change. Required.
	GetCertificate func(*tls.ClientHelloInfo) (*tls.Certificate, error)
	// ClientCAs verify the client certificate. Required unless Insecure.
	ClientCAs *x509.CertPool
	// Insecure accepts clients without a certificate. For tests only: any
	// process that reaches the port could then name any actor.
	Insecure bool
	// ErrorLog receives TLS handshake failures (a refused client among
	// them); nil means the standard logger.
	ErrorLog *log.Logger
	// ClientCertificate, when set, is told the verified client
	// certificate of each connection: the certificate kube-apiserver
	// holds in a file on its node, whose expiry nothing else reports.
	ClientCertificate func(*x509.Certificate)

	serving atomic.Bool
}

// LoadClientCAs reads a PEM bundle of the CAs that sign audit client
// certificates: the pool that verifies them, and the CAs themselves (whose
// expiry is reported).
func LoadClientCAs(path string) (*x509.CertPool, []*x509.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the audit client CA: %w", err)
	}
	pool := x509.NewCertPool()
	var cas []*x509.Certificate
	for block, rest := pem.Decode(data); block != nil; block, rest = pem.Decode(rest) {
		if block.Type != "CERTIFICATE" {
			continue
		}
		ca, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, nil, fmt.Errorf("the audit client CA %s: %w", path, err)
		}
		pool.AddCert(ca)
		cas = append(cas, ca)
	}
	if len(cas) == 0 {
		return nil, nil, fmt.Errorf("the audit client CA %s holds no PEM certificate", path)
	}
	return pool, cas, nil
}

// TLSConfig is the server's TLS configuration: TLS 1.2 or later, and a
// verified client certificate unless Insecure.
func (s *Server) TLSConfig() (*tls.Config, error) {
	if s.GetCertificate == nil {
		return nil, errors.New("the audit server needs a serving certificate")
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: s.GetCertificate, ClientAuth: tls.RequireAndVerifyClientCert}
	switch {
	case s.Insecure:
		cfg.ClientAuth = tls.NoClientCert
	case s.ClientCAs == nil:
		return nil, errors.New("the audit server needs a client CA unless it is insecure")
	default:
		cfg.ClientCAs = s.ClientCAs
	}
	if s.ClientCertificate != nil {
		// Called after the chain was verified, once per connection.
		cfg.VerifyConnection = func(state tls.ConnectionState) error {
			if len(state.PeerCertificates) > 0 {
				s.ClientCertificate(state.PeerCertificates[0])
			}
			return nil
		}
	}
	return cfg, nil
}

// Start listens on Addr and serves until ctx ends (see Serve).
func (s *Server) Start(ctx context.Context) error {
	listener, err := net.Listen("tcp", s.Addr)
	if err != nil {
		return fmt.Errorf("listening for audit webhooks on %s: %w", s.Addr, err)
	}
	return s.Serve(ctx, listener)
}

// Serve serves on listener until ctx ends, then lets the requests in
// flight finish for a short grace and returns nil; it returns an error
// when serving fails. It closes listener.
func (s *Server) Serve(ctx context.Context, listener net.Listener) error {
	cfg, err := s.TLSConfig()
	if err != nil {
		_ = listener.Close()
		return err
	}
	srv := &http.Server{
		Handler:           s.Handler,
		TLSConfig:         cfg,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		WriteTimeout:      time.Minute,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          s.ErrorLog,
	}
	done := make(chan error, 1)
	s.serving.Store(true)
	defer s.serving.Store(false)
	go func() { done <- srv.Serve(tls.NewListener(listener, cfg)) }()
	select {
	case err := <-done:
		return fmt.Errorf("serving audit webhooks: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("stopping the audit server: %w", err)
	}
	return nil
}

// NeedLeaderElection is false: every replica takes audit batches.
func (s *Server) NeedLeaderElection() bool { return false }

// Ready is a readiness check (a controller-runtime healthz.Checker): nil
// while the server is serving.
func (s *Server) Ready(*http.Request) error {
	if !s.serving.Load() {
		return errors.New("the audit server is not serving")
	}
	return nil
}
