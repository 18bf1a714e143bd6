// Package redisconn turns the operator's Redis flags into a client: one
// standalone Redis or Valkey, reached over TCP or TLS, with an ACL user or
// the default user's password, and a key prefix per installation. Resume
// cursors and the Redis fact transport share it. Sentinel and Cluster are
// not supported.
package redisconn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	goredis "github.com/redis/go-redis/v9"

	"github.com/configbutler/gitops-reverser/internal/redact"
)

// DefaultKeyPrefix starts every key the operator writes, unless
// --redis-key-prefix says otherwise.
const DefaultKeyPrefix = "gitops-reverser:"

// Options are the connection settings.
type Options struct {
	// Addr is a redis:// or rediss:// URL (credentials and database number
	// as go-redis parses them) or a bare host:port.
	Addr string
	// Username is the ACL user; it overrides one in the URL.
	Username string
	// Password overrides one in the URL; PasswordFile, when set, is read
	// again for every new connection, so a rotated Secret takes effect
	// without a restart, and wins over Password.
	Password     string
	PasswordFile string
	// CAFile is the CA bundle a rediss:// server's certificate is checked
	// against; the system roots when empty.
	CAFile string
	// KeyPrefix starts every key; DefaultKeyPrefix when empty.
	KeyPrefix string
}

// Prefix is the key prefix in use.
func (o Options) Prefix() string {
	if o.KeyPrefix == "" {
		return DefaultKeyPrefix
	}
	return o.KeyPrefix
}

// ClientOptions builds go-redis options from o; the error names what is
// wrong in terms of the flags.
func (o Options) ClientOptions() (*goredis.Options, error) {
	if o.Addr == "" {
		return nil, errors.New("no Redis address (--redis-addr)")
	}
	opts, err := o.parseAddr()
	if err != nil {
		return nil, err
	}
	if o.CAFile != "" {
		if opts.TLSConfig == nil {
			return nil, fmt.Errorf("--redis-ca-file is set but --redis-addr %q is not a rediss:// URL", redact.URL(o.Addr))
		}
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("reading the Redis CA bundle: %w", err)
		}
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("the Redis CA bundle %s holds no PEM certificate", o.CAFile)
		}
		opts.TLSConfig.RootCAs = roots
	}
	if o.Username != "" {
		opts.Username = o.Username
	}
	if o.Password != "" {
		opts.Password = o.Password
	}
	if o.PasswordFile != "" {
		if _, err := readPassword(o.PasswordFile); err != nil {
			return nil, err
		}
		username, file := opts.Username, o.PasswordFile
		opts.CredentialsProvider = func() (string, string) {
			password, _ := readPassword(file) // checked above; a vanished file fails AUTH, visibly
			return username, password
		}
	}
	return opts, nil
}

// parseAddr accepts a URL through go-redis's own parser, or host:port.
func (o Options) parseAddr() (*goredis.Options, error) {
	if !strings.Contains(o.Addr, "://") {
		return &goredis.Options{Addr: o.Addr}, nil
	}
	if !strings.HasPrefix(o.Addr, "redis://") && !strings.HasPrefix(o.Addr, "rediss://") {
		return nil, fmt.Errorf("--redis-addr %q: want redis://, rediss:// or host:port", redact.URL(o.Addr))
	}
	opts, err := goredis.ParseURL(o.Addr)
	if err != nil {
		return nil, fmt.Errorf("--redis-addr %q: %w", redact.URL(o.Addr), err)
	}
	if opts.TLSConfig != nil {
		opts.TLSConfig.MinVersion = tls.VersionTLS12
	}
	return opts, nil
}

func readPassword(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading the Redis password file: %w", err)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

// Connect builds a client from o. It does not dial: go-redis connects on
// first use, and a Monitor tells whether it can.
func (o Options) Connect() (*goredis.Client, error) {
	opts, err := o.ClientOptions()
	if err != nil {
		return nil, err
	}
	return goredis.NewClient(opts), nil
}

// pingTimeout bounds one PING of the Monitor.
const pingTimeout = 2 * time.Second

// loggerOnce guards go-redis's logger, a process global that its
// connection pools read while they run: it is set once per process.
var loggerOnce sync.Once

// UseLogger routes go-redis's own messages to log, the first time it is
// called in a process.
func UseLogger(log logr.Logger) {
	loggerOnce.Do(func() { goredis.SetLogger(Logger{Log: log}) })
}

// Logger carries go-redis's own messages (a failed dial, on every retry
// while Redis is away) to log at V(1), instead of the standard logger's
// unstructured lines on stderr. A Monitor's two lines per outage and the
// metrics say what matters.
type Logger struct{ Log logr.Logger }

// Printf implements go-redis's logging interface.
func (l Logger) Printf(_ context.Context, format string, v ...any) {
	l.Log.V(1).Info(fmt.Sprintf(format, v...))
}
