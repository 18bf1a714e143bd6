// Command demo is `make demo`: GitOps Reverser on a local control plane,
// mirroring the namespace demo into a local Git remote, the way a new user
// tries it. With -smoke (or DEMO_SMOKE=1) it exits once the samples are in
// Git, which is what its test runs.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zapcore"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/configbutler/gitops-reverser/internal/operator"
	"github.com/configbutler/gitops-reverser/test/harness"
)

func main() {
	smoke := flag.Bool("smoke", os.Getenv("DEMO_SMOKE") == "1", "exit 0 as soon as the samples are in Git (DEMO_SMOKE=1 does the same)")
	dir := flag.String("dir", filepath.Join(os.TempDir(), "gitops-reverser-demo"), "directory for the kubeconfig, the operator log and the Git remote")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, config{Dir: *dir, Smoke: *smoke, Out: os.Stdout}); err != nil {
		fmt.Fprintln(os.Stderr, "demo failed:", err)
		os.Exit(1)
	}
}

// config is one run of the demo.
type config struct {
	Dir   string    // wiped at start; holds kubeconfig, operator.log and git/ (kept at the end)
	Smoke bool      // stop once the samples are in Git
	Out   io.Writer // progress for the user
	// MirrorTimeout bounds the wait for the samples to reach Git (default 2m).
	MirrorTimeout time.Duration
}

// demo is what a run started, stopped in reverse order by run's defers.
type demo struct {
	config
	kube *harness.Kube
	git  *harness.GitServer
	// operatorDone is closed when operator.Run has returned operatorErr.
	operatorDone chan struct{}
	operatorErr  error
}

func (d *demo) say(format string, args ...any) { fmt.Fprintf(d.Out, "==> "+format+"\n", args...) }

// run is the whole demo. It returns nil when ctx ends (Ctrl-C) or, in smoke
// mode, once the samples are in Git; either way everything it started is
// stopped first.
func run(ctx context.Context, c config) (err error) {
	defer func() {
		if ctx.Err() != nil {
			err = nil // interrupted: whatever failed, failed because of it
		}
	}()
	if c.MirrorTimeout == 0 {
		c.MirrorTimeout = 2 * time.Minute
	}
	d := &demo{config: c}
	if err := os.RemoveAll(c.Dir); err != nil {
		return fmt.Errorf("clearing the demo directory %s: %w", c.Dir, err)
	}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return fmt.Errorf("creating the demo directory %s: %w", c.Dir, err)
	}
	logPath := filepath.Join(c.Dir, "operator.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("creating the operator log: %w", err)
	}
	defer logFile.Close()
	useOperatorLog(logFile)
	defer useOperatorLog(io.Discard)
	defer func() {
		_ = os.Remove(filepath.Join(c.Dir, "kubeconfig")) // its control plane is gone
		d.say("Stopped. The operator log stays at %s", logPath)
		if d.git != nil {
			d.say("The Git remote stays at %s; look at it with: git clone %s", d.git.RepoPath(repoName), d.git.RepoPath(repoName))
		}
	}()

	d.say("%s", controlPlaneStartNote())
	if d.kube, err = harness.StartKube(harness.KubeOptions{}); err != nil {
		return err
	}
	defer func() {
		d.say("Stopping the control plane")
		d.kube.Stop()
	}()
	if ctx.Err() != nil {
		return nil // interrupted while the control plane started
	}
	if err := d.startGitServer(); err != nil {
		return err
	}
	defer func() {
		d.say("Stopping the Git server")
		d.git.Stop()
	}()
	kubeconfig, err := d.writeKubeconfig()
	if err != nil {
		return err
	}
	stopOperator := d.startOperator(logPath)
	defer func() {
		if err := stopOperator(); err != nil {
			d.say("The operator stopped with an error: %v", err)
		}
	}()
	if err := d.applySamples(ctx); err != nil {
		return err
	}
	if err := d.waitForMirror(ctx); err != nil {
		return err
	}
	if err := d.showMirror(); err != nil {
		return err
	}
	if c.Smoke {
		d.say("Smoke run: the samples are in Git, stopping")
		return nil
	}
	d.printTryIt(kubeconfig)
	return d.followCommits(ctx)
}

// controlPlaneStartNote announces the control plane's start, with the
// build time only when its binaries are not cached yet.
func controlPlaneStartNote() string {
	if harness.BinaryCached("etcd", harness.EtcdVersion) && harness.BinaryCached("kube-apiserver", harness.KubeAPIServerVersion) {
		return "Starting etcd and kube-apiserver"
	}
	return "Building etcd and kube-apiserver from source (the first run on a machine: about 25 minutes), then starting them"
}

func (d *demo) startGitServer() error {
	var err error
	d.git, err = harness.StartGitServer(filepath.Join(d.Dir, "git"), harness.GitServerOptions{HTTPUsername: gitUser, HTTPPassword: gitPassword})
	if err != nil {
		return fmt.Errorf("starting the Git server: %w", err)
	}
	if _, err := d.git.CreateBareRepo(repoName); err != nil {
		d.git.Stop()
		d.git = nil
		return err
	}
	d.say("Git remote ready: %s (user %s)", d.git.HTTPURL(repoName), gitUser)
	return nil
}

func (d *demo) writeKubeconfig() (string, error) {
	b, err := d.kube.Kubeconfig()
	if err != nil {
		return "", err
	}
	path := filepath.Join(d.Dir, "kubeconfig")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return "", fmt.Errorf("writing the kubeconfig: %w", err)
	}
	d.say("Control plane ready; admin kubeconfig at %s", path)
	return path, nil
}

// startOperator runs the operator in this process; the returned stop
// cancels it and waits (up to 30s) for it to return.
func (d *demo) startOperator(logPath string) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	d.operatorDone = make(chan struct{})
	go func() {
		defer close(d.operatorDone)
		d.operatorErr = operator.Run(ctx, operator.Options{
			Config: d.kube.Config(), MetricsAddr: "0", ProbeAddr: "0", LeaderElect: false,
			OperatorNamespace: "default", Registry: prometheus.NewRegistry(), SkipNameValidation: true,
		})
	}()
	d.say("Operator started in this process; its log: %s", logPath)
	return func() error {
		d.say("Stopping the operator")
		cancel()
		select {
		case <-d.operatorDone:
			return d.operatorErr
		case <-time.After(30 * time.Second):
			return errors.New("the operator did not stop within 30s")
		}
	}
}

// operatorLog receives the operator's (and client-go's) log. Those loggers
// are process-wide, so they are installed once and each run only points
// operatorLog at its own file.
var operatorLog struct {
	sync.Mutex
	w       io.Writer
	install sync.Once
}

func useOperatorLog(w io.Writer) {
	operatorLog.install.Do(func() {
		logger := zap.New(zap.WriteTo(writerFunc(writeOperatorLog)), zap.ConsoleEncoder(), zap.Level(zapcore.InfoLevel))
		ctrl.SetLogger(logger)
		klog.SetLogger(logger)
	})
	operatorLog.Lock()
	defer operatorLog.Unlock()
	operatorLog.w = w
}

func writeOperatorLog(p []byte) (int, error) {
	operatorLog.Lock()
	defer operatorLog.Unlock()
	return operatorLog.w.Write(p)
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// operatorFailed reports an operator that returned on its own.
func (d *demo) operatorFailed() error {
	select {
	case <-d.operatorDone:
		return fmt.Errorf("the operator stopped unexpectedly (see its log): %w", cmp.Or(d.operatorErr, errors.New("no error")))
	default:
		return nil
	}
}
