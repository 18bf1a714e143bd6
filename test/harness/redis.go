package harness

import (
	"bufio"
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
	process *Process
}

// redisStartAttempts bounds retries when the port FreePort found was taken
// by someone else before redis-server bound it.
const redisStartAttempts = 3

// StartRedis starts redis-server with its working directory, log and any
// scratch files in dir, and returns once it answers PING.
func StartRedis(dir string) (*Redis, error) {
	bin, err := LookSystemBinary("redis-server", "redis-server")
	if err != nil {
		return nil, err
	}
	var lastErr error
	for attempt := 0; attempt < redisStartAttempts; attempt++ {
		r, err := startRedisOnce(bin, dir)
		if err == nil {
			return r, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

func startRedisOnce(bin, dir string) (*Redis, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	args := []string{
		"--save", "", // no RDB snapshots
		"--appendonly", "no",
		"--bind", "127.0.0.1",
		"--port", strconv.Itoa(port),
		"--dir", dir,
		// The test process is the only client; protected mode and the
		// background saver only add log noise.
		"--protected-mode", "no",
	}
	process, err := StartProcess("redis", dir, bin, args, nil)
	if err != nil {
		return nil, err
	}
	r := &Redis{addr: loopbackAddr(port), process: process}
	if err := r.waitForPing(10 * time.Second); err != nil {
		process.Stop(2 * time.Second)
		return nil, err
	}
	return r, nil
}

// Addr is host:port for a Redis client.
func (r *Redis) Addr() string { return r.addr }

// LogPath is the server's log, for test failure messages.
func (r *Redis) LogPath() string { return r.process.LogPath }

// Stop shuts redis-server down and waits for it to exit, which releases its
// port.
func (r *Redis) Stop() {
	if r == nil {
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
		if lastErr = pingRedis(r.addr); lastErr == nil {
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

// pingRedis sends one inline PING command and expects "+PONG"; speaking the
// protocol directly keeps the harness free of a client library.
func pingRedis(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return fmt.Errorf("connecting to redis: %w", err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return fmt.Errorf("sending PING: %w", err)
	}
	reply, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return fmt.Errorf("reading PING reply: %w", err)
	}
	if reply = strings.TrimSpace(reply); reply != "+PONG" {
		return fmt.Errorf("PING answered %q", reply)
	}
	return nil
}
