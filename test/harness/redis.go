package harness

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// Redis is a redis-server from the operating system, listening on a
// loopback port with persistence off, so every test run starts empty and
// leaves nothing behind but its log.
type Redis struct {
	addr    string
	port    int
	bin     string
	dir     string
	opts    RedisOptions
	process *Process
}

// RedisOptions start a redis-server that asks for credentials or speaks
// TLS; the zero value is a plain, open server.
type RedisOptions struct {
	// Password is the default user's password (requirepass).
	Password string
	// User and UserPassword add an ACL user allowed every command and key.
	User, UserPassword string
	// TLS, when set, serves TLS only, with this certificate (issued for
	// 127.0.0.1); clients are not asked for certificates of their own.
	TLS *Pair
	// CAPEM is the CA that issued TLS, for the harness's own PING.
	CAPEM []byte
}

// redisStartAttempts bounds retries when the port FreePort found was taken
// by someone else before redis-server bound it.
const redisStartAttempts = 3

// StartRedis starts an open redis-server with its working directory, log
// and any scratch files in dir, and returns once it answers PING.
func StartRedis(dir string) (*Redis, error) { return StartRedisWith(dir, RedisOptions{}) }

// StartRedisWith starts redis-server as opts says.
func StartRedisWith(dir string, opts RedisOptions) (*Redis, error) {
	bin, err := LookSystemBinary("redis-server", "redis-server")
	if err != nil {
		return nil, err
	}
	var lastErr error
	for attempt := 0; attempt < redisStartAttempts; attempt++ {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		r := &Redis{addr: loopbackAddr(port), port: port, bin: bin, dir: dir, opts: opts}
		if lastErr = r.start(); lastErr == nil {
			return r, nil
		}
	}
	return nil, lastErr
}

func (r *Redis) args() []string {
	args := []string{
		"--save", "", // no RDB snapshots
		"--appendonly", "no",
		"--bind", "127.0.0.1",
		"--dir", r.dir,
		// The test process is the only client; protected mode and the
		// background saver only add log noise.
		"--protected-mode", "no",
	}
	if r.opts.TLS != nil {
		args = append(args, "--port", "0", "--tls-port", strconv.Itoa(r.port),
			"--tls-cert-file", r.opts.TLS.CertFile, "--tls-key-file", r.opts.TLS.KeyFile, "--tls-auth-clients", "no")
	} else {
		args = append(args, "--port", strconv.Itoa(r.port))
	}
	if r.opts.Password != "" {
		args = append(args, "--requirepass", r.opts.Password)
	}
	if r.opts.User != "" {
		args = append(args, "--user", r.opts.User, "on", ">"+r.opts.UserPassword, "~*", "&*", "+@all")
	}
	return args
}

func (r *Redis) start() error {
	process, err := StartProcess("redis", r.dir, r.bin, r.args(), nil)
	if err != nil {
		return err
	}
	r.process = process
	if err := r.waitForPing(10 * time.Second); err != nil {
		process.Stop(2 * time.Second)
		return err
	}
	return nil
}

// Restart starts the server again on the same port after Stop, empty (it
// keeps nothing on disk): an outage and its end, as clients see them.
func (r *Redis) Restart() error { return r.start() }

// Addr is host:port for a Redis client.
func (r *Redis) Addr() string { return r.addr }

// URL is the server's redis:// (or rediss://) URL, without credentials.
func (r *Redis) URL() string {
	if r.opts.TLS != nil {
		return "rediss://" + r.addr
	}
	return "redis://" + r.addr
}

// LogPath is the server's log, for test failure messages.
func (r *Redis) LogPath() string { return r.process.LogPath }

// Stop shuts redis-server down and waits for it to exit, which releases its
// port.
func (r *Redis) Stop() {
	if r == nil || r.process == nil {
		return
	}
	r.process.Stop(5 * time.Second)
}

// waitForPing waits until the server accepts a connection and answers PING
// with PONG; accepting a connection alone can precede being ready.
func (r *Redis) waitForPing(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	if err := r.process.WaitTCP(r.addr, timeout); err != nil {
		return err
	}
	var lastErr error
	for time.Now().Before(deadline) {
		if lastErr = r.ping(); lastErr == nil {
			return nil
		}
		if r.process.Exited() {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("redis on %s did not answer PING within %s: %w\n%s",
		r.addr, timeout, lastErr, r.process.Tail())
}

// ping sends inline commands (AUTH when the server asks for it, then PING)
// and expects "+PONG"; speaking the protocol directly keeps the harness
// free of a client library.
func (r *Redis) ping() error {
	conn, err := r.dial()
	if err != nil {
		return fmt.Errorf("connecting to redis: %w", err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	reader := bufio.NewReader(conn)
	if r.opts.Password != "" {
		if err := inlineCommand(conn, reader, "AUTH "+r.opts.Password, "+OK"); err != nil {
			return err
		}
	}
	return inlineCommand(conn, reader, "PING", "+PONG")
}

func (r *Redis) dial() (net.Conn, error) {
	if r.opts.TLS == nil {
		return net.DialTimeout("tcp", r.addr, time.Second)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(r.opts.CAPEM)
	dialer := &net.Dialer{Timeout: time.Second}
	return tls.DialWithDialer(dialer, "tcp", r.addr, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12})
}

func inlineCommand(conn net.Conn, reader *bufio.Reader, command, want string) error {
	if _, err := conn.Write([]byte(command + "\r\n")); err != nil {
		return fmt.Errorf("sending %s: %w", strings.Fields(command)[0], err)
	}
	reply, err := reader.ReadString('\n')
	if err != nil {
		return fmt.Errorf("reading the %s reply: %w", strings.Fields(command)[0], err)
	}
	if reply = strings.TrimSpace(reply); reply != want {
		return fmt.Errorf("%s answered %q", strings.Fields(command)[0], reply)
	}
	return nil
}
