package harness

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
)

// startHTTP serves git http-backend, the smart-HTTP server git itself ships,
// as a CGI program on a loopback port the kernel picks.
func (s *GitServer) startHTTP() error {
	// Listening on port 0 rather than a FreePort number leaves no window in
	// which another process could take the port.
	listener, err := net.Listen("tcp", loopbackAddr(0))
	if err != nil {
		return fmt.Errorf("listening for git over HTTP: %w", err)
	}
	backend := &cgi.Handler{
		Path:   s.gitBin,
		Args:   []string{"http-backend"},
		Dir:    s.homeDir,
		Env:    append(s.gitEnv(), "GIT_PROJECT_ROOT="+s.Root, "GIT_HTTP_EXPORT_ALL=1"),
		Stderr: s.logFile,
		Logger: s.logger,
	}
	s.httpListener = listener
	s.httpServer = &http.Server{
		Handler:  s.requireBasicAuth(s.unchunkRequestBody(backend)),
		ErrorLog: s.logger,
	}
	s.httpDone = make(chan struct{})
	go func() {
		defer close(s.httpDone)
		if err := s.httpServer.Serve(listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.logger.Printf("git HTTP server stopped: %v", err)
		}
	}()
	return nil
}

// requireBasicAuth refuses requests without the configured credentials the
// way a forge does — 401 with a Basic challenge — so the git client asks its
// credential helpers and a test can prove a wrong password is refused.
func (s *GitServer) requireBasicAuth(next http.Handler) http.Handler {
	if s.options.HTTPUsername == "" {
		return next
	}
	wantUser := []byte(s.options.HTTPUsername)
	wantPassword := []byte(s.options.HTTPPassword)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, password, ok := r.BasicAuth()
		userOK := subtle.ConstantTimeCompare([]byte(user), wantUser) == 1
		passwordOK := subtle.ConstantTimeCompare([]byte(password), wantPassword) == 1
		if !ok || !userOK || !passwordOK {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// unchunkRequestBody spools a chunked request body to a temporary file so
// it can be handed on with a Content-Length. git sends pushes larger than
// http.postBuffer (1 MiB) chunked, and net/http/cgi answers chunked bodies
// with 400 because CGI has no way to pass them.
func (s *GitServer) unchunkRequestBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength >= 0 || len(r.TransferEncoding) == 0 {
			next.ServeHTTP(w, r)
			return
		}
		spool, err := os.CreateTemp(s.tmpDir, "http-body-")
		if err != nil {
			s.logger.Printf("spooling a chunked request body: %v", err)
			http.Error(w, "cannot spool request body", http.StatusInternalServerError)
			return
		}
		defer os.Remove(spool.Name())
		defer spool.Close()
		size, err := io.Copy(spool, r.Body)
		if err == nil {
			_, err = spool.Seek(0, io.SeekStart)
		}
		if err != nil {
			s.logger.Printf("spooling a chunked request body: %v", err)
			http.Error(w, "cannot read request body", http.StatusBadRequest)
			return
		}
		r.Body = spool
		r.ContentLength = size
		r.TransferEncoding = nil
		next.ServeHTTP(w, r)
	})
}
