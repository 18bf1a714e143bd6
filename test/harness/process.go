package harness

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// FreePort is a TCP port on 127.0.0.1 that nothing listens on, picked
// below the kernel's ephemeral range. A port the kernel hands out for
// 127.0.0.1:0 is free only until another connection on the machine takes
// it as its local port, and the process it is meant for binds it later,
// after a start that takes seconds on a loaded machine: an operator that
// then cannot bind its metrics address exits. Below the range the kernel
// never picks a port by itself, so only another FreePort can take it.
func FreePort() (int, error) {
	low, err := ephemeralLow()
	if err != nil || low <= freePortFloor+1000 {
		return kernelPort()
	}
	for range 100 {
		port := freePortFloor + rand.IntN(low-freePortFloor)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err == nil {
			l.Close()
			return port, nil
		}
	}
	return kernelPort()
}

// freePortFloor keeps FreePort above the ports services are commonly
// configured on.
const freePortFloor = 20000

// ephemeralLow is the first port of the kernel's ephemeral range.
func ephemeralLow() (int, error) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, fmt.Errorf("reading the ephemeral port range: %w", err)
	}
	fields := strings.Fields(string(b))
	if len(fields) != 2 {
		return 0, fmt.Errorf("the ephemeral port range %q is not two ports", b)
	}
	return strconv.Atoi(fields[0])
}

// kernelPort asks the kernel for a free port, where the ephemeral range
// leaves no room below it.
func kernelPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free loopback port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Process is a child process whose output goes to a log file, so a failing
// test can point at what the component said.
type Process struct {
	Name    string
	LogPath string
	cmd     *exec.Cmd
	done    chan struct{}
	waitErr error
}

// StartProcess starts bin with args in dir, logging stdout and stderr to
// dir/<name>.log. env is appended to the current environment.
func StartProcess(name, dir, bin string, args, env []string) (*Process, error) {
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("creating %s log: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	// Own process group: a Ctrl-C to the test binary reaches us, not the
	// component, so teardown stays in order.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s (%s): %w", name, bin, err)
	}
	p := &Process{Name: name, LogPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Stop sends SIGTERM and waits up to grace before killing the process.
func (p *Process) Stop(grace time.Duration) {
	if p == nil || p.Exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// Tail returns the last bytes of the process log, for error messages.
func (p *Process) Tail() string { return TailFile(p.LogPath) }

// TailFile returns the last 4,000 bytes of a log file, for error messages;
// "" when it cannot be read.
func TailFile(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	const max = 4000
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}

// WaitHTTP polls url until it answers 200 or timeout passes, failing early
// when the process exits.
func (p *Process) WaitHTTP(ctx context.Context, client *http.Client, url string, timeout time.Duration) error {
	if client == nil {
		client = http.DefaultClient
	}
	deadline := time.Now().Add(timeout)
	var lastErr error
	for time.Now().Before(deadline) {
		if p.Exited() {
			return fmt.Errorf("%s exited before %s answered: %v\n%s", p.Name, url, p.waitErr, p.Tail())
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			lastErr = errors.New(resp.Status)
		} else {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s did not answer %s within %s (last: %v)\n%s", p.Name, url, timeout, lastErr, p.Tail())
}

// WaitTCP polls until addr accepts a connection or timeout passes.
func (p *Process) WaitTCP(addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if p.Exited() {
			return fmt.Errorf("%s exited before listening on %s: %v\n%s", p.Name, addr, p.waitErr, p.Tail())
		}
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s did not listen on %s within %s\n%s", p.Name, addr, timeout, p.Tail())
}

func loopbackAddr(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }
