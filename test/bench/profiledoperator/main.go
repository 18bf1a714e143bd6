// Command profiledoperator is the operator with profiles, for finding what
// dominates a benchmark scenario. It runs the same operator.Run as
// cmd/gitops-reverser with the flags the benchmarks pass, writes a pprof CPU
// profile to --cpuprofile and a heap profile to --heapprofile when it
// stops, and serves net/http/pprof on --pprof-bind-address so a benchmark
// can take a heap profile at the moment it measures. The benchmarks build it
// instead of cmd/gitops-reverser when GITOPS_REVERSER_BENCH_PROFILE_DIR is
// set.
package main

import (
	"errors"
	"flag"
	"fmt"
	"net/http"
	_ "net/http/pprof" // serves /debug/pprof on http.DefaultServeMux
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strings"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/configbutler/gitops-reverser/internal/operator"
	"github.com/configbutler/gitops-reverser/internal/redisconn"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "profiledoperator:", err)
		os.Exit(1)
	}
}

func run() error {
	var opts operator.Options
	var cpuProfile, heapProfile, pprofAddr string
	// --kubeconfig is registered by controller-runtime and read by GetConfig.
	flag.StringVar(&opts.MetricsAddr, "metrics-bind-address", "0", "Address the metrics endpoint binds to.")
	flag.StringVar(&opts.ProbeAddr, "health-probe-bind-address", "0", "Address of /healthz and /readyz.")
	flag.BoolVar(&opts.LeaderElect, "leader-elect", false, "Elect a leader.")
	flag.StringVar(&opts.OperatorNamespace, "operator-namespace", "default", "Namespace of remote kubeconfig Secrets.")
	flag.StringVar(&cpuProfile, "cpuprofile", "", "Write a CPU profile here when the operator stops.")
	flag.StringVar(&heapProfile, "heapprofile", "", "Write a heap profile here when the operator stops.")
	flag.StringVar(&pprofAddr, "pprof-bind-address", "", "Serve net/http/pprof on this address.")
	var peakHeapProfile string
	flag.StringVar(&peakHeapProfile, "peak-heap-profile", "", "Write a heap profile here each time the heap reaches a new peak.")
	// Scenario H's: resume cursors in Redis, credentials as the chart scopes them.
	var redisAddr, redisPrefix, credentialNamespaces string
	flag.StringVar(&redisAddr, "redis-addr", "", "Redis host:port for resume cursors; empty runs without Redis.")
	flag.StringVar(&redisPrefix, "redis-key-prefix", "", "Starts every Redis key the operator writes.")
	flag.StringVar(&credentialNamespaces, "credential-namespaces", "", "Comma-separated namespaces whose Secrets the operator reads.")
	// Accepted so the benchmark passes both binaries the same flags; this
	// build runs configured-author mode only.
	attribution := flag.Bool("author-attribution", false, "Must be false: this build runs configured-author mode.")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))

	if *attribution {
		return errors.New("--author-attribution=true is not supported by the profiled build")
	}
	config, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("loading the kubeconfig: %w", err)
	}
	opts.Config = config
	if redisAddr != "" {
		opts.Redis = &redisconn.Options{Addr: redisAddr, KeyPrefix: redisPrefix}
	}
	if credentialNamespaces != "" {
		opts.CredentialNamespaces = strings.Split(credentialNamespaces, ",")
	}
	if pprofAddr != "" {
		server := &http.Server{Addr: pprofAddr, ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := server.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
				ctrl.Log.Error(err, "serving pprof")
			}
		}()
		defer server.Close()
	}
	if cpuProfile != "" {
		stop, err := startCPUProfile(cpuProfile)
		if err != nil {
			return err
		}
		// Runs after operator.Run returns on SIGTERM, so the profile covers
		// the whole run.
		defer stop()
	}
	if peakHeapProfile != "" {
		stop := make(chan struct{})
		defer close(stop)
		go keepPeakHeapProfile(peakHeapProfile, stop)
	}
	if err := operator.Run(ctrl.SetupSignalHandler(), opts); err != nil {
		return err
	}
	if heapProfile != "" {
		return writeHeapProfile(heapProfile)
	}
	return nil
}

func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("creating the CPU profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting the CPU profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// keepPeakHeapProfile writes a heap profile to path whenever the heap's
// objects pass the largest size seen so far by peakStep: the profile then
// shows what was live at (about) the operator's peak, which the profile
// at a benchmark's measuring moment does not. A heap profile describes the
// heap as of the last completed GC, so it trails the peak by one cycle.
func keepPeakHeapProfile(path string, stop <-chan struct{}) {
	const peakStep = 8 << 20
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak uint64
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		metrics.Read(sample)
		if v := sample[0].Value.Uint64(); v > peak+peakStep {
			peak = v
			if err := writeProfileTo(path); err != nil {
				ctrl.Log.Error(err, "writing the peak heap profile")
			}
		}
	}
}

func writeProfileTo(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("creating the heap profile: %w", err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		return fmt.Errorf("writing the heap profile: %w", err)
	}
	return nil
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("creating the heap profile: %w", err)
	}
	defer f.Close()
	runtime.GC() // the in-use figures then describe live memory
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		return fmt.Errorf("writing the heap profile: %w", err)
	}
	return nil
}
