package bench

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/configbutler/gitops-reverser/test/harness"
)

// userHZ is the unit of utime and stime in /proc/<pid>/stat: USER_HZ is
// 100 on every Linux architecture Go supports.
const userHZ = 100

// operatorRun is one run of the operator binary as a child process.
type operatorRun struct {
	name       string
	cmd        *exec.Cmd
	logPath    string
	metricsURL string
	// pprofURL serves the run's profiles; profileDir is set in a profiling
	// build, which saves a heap profile at every usage read.
	pprofURL, profileDir string
	started              time.Time
	usageReads           int
	done                 chan struct{}
	waitErr              error
}

// startOperator starts the operator against the shared control plane. name
// labels its log file (and CPU profile, in a profiling build).
func startOperator(e *benchEnv, name string) (*operatorRun, error) {
	return startOperatorArgs(e, name)
}

// startOperatorArgs is startOperator with further flags, which win over
// the defaults above them.
func startOperatorArgs(e *benchEnv, name string, extra ...string) (*operatorRun, error) {
	port, err := harness.FreePort()
	if err != nil {
		return nil, err
	}
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", port)
	args := []string{
		"--kubeconfig=" + e.kubeconfig,
		"--leader-elect=false",
		// Configured-author mode: the scenarios measure the pipeline without
		// audit events (the binary's default is attribution on).
		"--author-attribution=false",
		"--metrics-bind-address=" + metricsAddr,
		"--health-probe-bind-address=0",
		"--operator-namespace=default",
	}
	// Both builds serve pprof (the operator's --pprof-bind-address), so a
	// scenario can read the live heap of the moment it measures.
	pprofPort, err := harness.FreePort()
	if err != nil {
		return nil, err
	}
	pprofURL := fmt.Sprintf("http://127.0.0.1:%d/debug/pprof", pprofPort)
	args = append(args, fmt.Sprintf("--pprof-bind-address=127.0.0.1:%d", pprofPort))
	if e.profileDir != "" {
		args = append(args, "--cpuprofile="+filepath.Join(e.profileDir, name+"-cpu.pprof"),
			"--heapprofile="+filepath.Join(e.profileDir, name+"-heap-at-exit.pprof"),
			"--peak-heap-profile="+filepath.Join(e.profileDir, name+"-heap-peak.pprof"))
	}
	logPath := filepath.Join(e.dir, "operator-"+name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("creating the operator log: %w", err)
	}
	cmd := exec.Command(e.operatorBinary, append(args, extra...)...)
	cmd.Env = append(os.Environ(), strings.Fields(os.Getenv(operatorEnvEnv))...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// A dying benchmark must not leave an operator writing to the remote.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	o := &operatorRun{name: name, cmd: cmd, logPath: logPath, metricsURL: "http://" + metricsAddr + "/metrics",
		pprofURL: pprofURL, profileDir: e.profileDir, done: make(chan struct{})}
	o.started = time.Now()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting the operator: %w", err)
	}
	go func() {
		o.waitErr = cmd.Wait()
		logFile.Close()
		close(o.done)
	}()
	return o, nil
}

// usage is what the operator consumed: CPU seconds (user+system) and peak
// resident memory; the current resident memory split into anonymous
// (heap, stacks) and file-backed (the binary's pages) explains the peak.
type usage struct {
	CPUSeconds float64
	PeakRSSMiB float64
	AnonRSSMiB float64
	FileRSSMiB float64
}

// usage reads the running process's CPU time and memory from /proc. In a
// profiling build it also saves a heap profile of this moment.
func (o *operatorRun) usage() (usage, error) {
	pid := o.cmd.Process.Pid
	cpu, err := readCPUSeconds(pid)
	if err != nil {
		return usage{}, err
	}
	mem, err := readStatusKiB(pid, "VmHWM", "RssAnon", "RssFile")
	if err != nil {
		return usage{}, err
	}
	if o.profileDir != "" {
		o.usageReads++
		path := filepath.Join(o.profileDir, fmt.Sprintf("%s-heap-%d.pprof", o.name, o.usageReads))
		if err := o.saveHeapProfile(path); err != nil {
			return usage{}, err
		}
	}
	return usage{CPUSeconds: cpu, PeakRSSMiB: mem[0] / 1024, AnonRSSMiB: mem[1] / 1024, FileRSSMiB: mem[2] / 1024}, nil
}

func readCPUSeconds(pid int) (float64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("reading the operator's CPU time: %w", err)
	}
	// The command name may hold spaces and parentheses; fields are counted
	// from after its closing parenthesis, where field 3 (state) starts.
	rest := raw[bytes.LastIndexByte(raw, ')')+2:]
	fields := strings.Fields(string(rest))
	const utimeField, stimeField = 14 - 3, 15 - 3
	if len(fields) <= stimeField {
		return 0, fmt.Errorf("parsing /proc/%d/stat: only %d fields", pid, len(fields))
	}
	utime, err := strconv.ParseFloat(fields[utimeField], 64)
	if err != nil {
		return 0, fmt.Errorf("parsing utime in /proc/%d/stat: %w", pid, err)
	}
	stime, err := strconv.ParseFloat(fields[stimeField], 64)
	if err != nil {
		return 0, fmt.Errorf("parsing stime in /proc/%d/stat: %w", pid, err)
	}
	return (utime + stime) / userHZ, nil
}

// readStatusKiB reads memory fields ("VmHWM", "RssAnon", ...) of
// /proc/<pid>/status, in KiB, in the order asked.
func readStatusKiB(pid int, fields ...string) ([]float64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, fmt.Errorf("reading the operator's memory: %w", err)
	}
	values := make([]float64, len(fields))
	for i, field := range fields {
		found := false
		for _, line := range strings.Split(string(raw), "\n") {
			if _, err := fmt.Sscanf(line, field+": %f kB", &values[i]); err == nil {
				found = true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("no %s in /proc/%d/status", field, pid)
		}
	}
	return values, nil
}

// saveHeapProfile fetches the operator's heap profile (after a GC, so in-use
// figures are live memory) into path.
func (o *operatorRun) saveHeapProfile(path string) error {
	resp, err := http.Get(o.pprofURL + "/heap?gc=1")
	if err != nil {
		return fmt.Errorf("fetching the operator's heap profile: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("fetching the operator's heap profile: %s", resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("creating %s: %w", path, err)
	}
	defer f.Close()
	if _, err := io.Copy(f, resp.Body); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// stop ends the operator with SIGTERM, as Kubernetes would, and returns
// its whole-life usage from the kernel's accounting of the child.
func (o *operatorRun) stop() (usage, error) {
	select {
	case <-o.done:
	default:
		_ = o.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-o.done:
		case <-time.After(30 * time.Second):
			_ = o.cmd.Process.Kill()
			<-o.done
			return usage{}, fmt.Errorf("the operator did not stop within 30s after SIGTERM (log %s)", o.logPath)
		}
	}
	var exitErr *exec.ExitError
	if o.waitErr != nil && !errors.As(o.waitErr, &exitErr) {
		return usage{}, fmt.Errorf("waiting for the operator: %w", o.waitErr)
	}
	ru, ok := o.cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return usage{}, errors.New("no resource usage for the operator process")
	}
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	// Linux reports ru_maxrss in KiB.
	return usage{CPUSeconds: cpu.Seconds(), PeakRSSMiB: float64(ru.Maxrss) / 1024}, nil
}

// exited reports whether the operator has ended, with its log tail.
func (o *operatorRun) exited() error {
	select {
	case <-o.done:
		return fmt.Errorf("the operator exited (%v):\n%s", o.waitErr, o.logTail())
	default:
		return nil
	}
}

func (o *operatorRun) logTail() string { return harness.TailFile(o.logPath) }

// stopOperator stops a run that the scenario no longer measures and logs
// what the kernel accounted for its whole life.
func stopOperator(b *testing.B, op *operatorRun) {
	b.Helper()
	u, err := op.stop()
	if err != nil {
		b.Error(err)
		return
	}
	b.Logf("operator run %s, whole life: %.2f s CPU, %.1f MiB peak RSS", op.name, u.CPUSeconds, u.PeakRSSMiB)
}
