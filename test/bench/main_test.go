package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/test/harness"
)

const (
	gitUser     = "mirror"
	gitPassword = "s3cret-token"
	// profileDirEnv names a directory that receives CPU and heap profiles of
	// every operator run; the operator is then built from ./profiledoperator.
	profileDirEnv = "GITOPS_REVERSER_BENCH_PROFILE_DIR"
	// operatorEnvEnv adds space-separated NAME=value pairs to the operator's
	// environment only (GOMEMLIMIT=30MiB, GOGC=50), to try runtime settings
	// without changing the benchmark process.
	operatorEnvEnv = "GITOPS_REVERSER_BENCH_OPERATOR_ENV"
	// keepEnv keeps the benchmark directory (operator logs, repositories).
	keepEnv = "GITOPS_REVERSER_BENCH_KEEP"
)

// benchEnv is shared by every benchmark of the package: one control plane,
// one Git server, one Gitea (when a scenario needs it) and one operator
// binary. Each scenario uses its own
// namespaces and repository.
type benchEnv struct {
	dir        string
	kube       *harness.Kube
	git        *harness.GitServer
	kubeconfig string
	// operatorBinary is the built operator; profileDir is set when it is the
	// profiling build.
	operatorBinary string
	profileDir     string
	// gitea starts with the first scenario that commits through it.
	gitea lazyGitea
	// audit is the API server's audit webhook, for scenario G.
	audit benchAudit
}

var (
	envOnce sync.Once
	env     *benchEnv
	errEnv  error
)

// TestMain starts nothing by itself: the environment starts with the first
// benchmark that runs, so `go test ./...` (no -bench) costs nothing here.
func TestMain(m *testing.M) {
	code := m.Run()
	if env != nil {
		printSummary(os.Stdout)
		env.stop()
	}
	os.Exit(code)
}

// sharedEnv starts the environment once and returns it.
func sharedEnv(b *testing.B) *benchEnv {
	b.Helper()
	envOnce.Do(func() { env, errEnv = startEnv() })
	if errEnv != nil {
		b.Fatal(errEnv)
	}
	return env
}

func startEnv() (*benchEnv, error) {
	dir, err := os.MkdirTemp("", "gitops-reverser-bench-")
	if err != nil {
		return nil, fmt.Errorf("creating the benchmark directory: %w", err)
	}
	e := &benchEnv{dir: dir, profileDir: os.Getenv(profileDirEnv)}
	if err := e.start(); err != nil {
		e.stop()
		return nil, err
	}
	return e, nil
}

func (e *benchEnv) start() error {
	var err error
	if e.operatorBinary, err = buildOperator(e.dir, e.profileDir != ""); err != nil {
		return err
	}
	e.git, err = harness.StartGitServer(filepath.Join(e.dir, "git"),
		harness.GitServerOptions{HTTPUsername: gitUser, HTTPPassword: gitPassword})
	if err != nil {
		return fmt.Errorf("starting the git server: %w", err)
	}
	if e.audit, err = prepareAudit(e.dir); err != nil {
		return err
	}
	if e.kube, err = harness.StartKube(harness.KubeOptions{AuditPolicyFile: e.audit.policyFile,
		AuditWebhookConfigFile: e.audit.webhookFile, AuditBatchMaxWait: benchAuditBatchMaxWait}); err != nil {
		return fmt.Errorf("starting the control plane: %w", err)
	}
	kubeconfig, err := e.kube.Kubeconfig()
	if err != nil {
		return err
	}
	e.kubeconfig = filepath.Join(e.dir, "kubeconfig")
	if err := os.WriteFile(e.kubeconfig, kubeconfig, 0o600); err != nil {
		return fmt.Errorf("writing the operator's kubeconfig: %w", err)
	}
	// Every scenario's control namespace may read the local cluster.
	provider := &v1alpha3.ClusterProvider{ObjectMeta: metav1.ObjectMeta{Name: v1alpha3.DefaultClusterProvider},
		Spec: v1alpha3.ClusterProviderSpec{AllowedNamespaces: &v1alpha3.NamespacePolicy{Selector: &metav1.LabelSelector{}}}}
	if err := e.kube.Client().Create(context.Background(), provider); err != nil {
		return fmt.Errorf("creating the default ClusterProvider: %w", err)
	}
	return e.warmUp()
}

// warmUp mirrors one ConfigMap with a throw-away operator run before any
// scenario. Without it the first operator run against a fresh API server
// spent about a second longer syncing caches (most likely the API server
// building each CRD's storage on first use), and the page cache had not seen
// the operator binary yet; neither belongs to a scenario.
func (e *benchEnv) warmUp() error {
	ctx := context.Background()
	m, err := newMirror(ctx, e, "warm-up", mirrorOptions{commitWindow: 100 * time.Millisecond})
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: m.name, Name: "probe"}, Data: map[string]string{"key-0": "warm"}}
	if err := e.client().Create(ctx, cm); err != nil {
		return fmt.Errorf("creating the warm-up ConfigMap: %w", err)
	}
	op, err := startOperator(e, "warm-up")
	if err != nil {
		return err
	}
	_, err = pollHeads(ctx, m.remote, op, 100*time.Millisecond, 2*time.Minute, fileContains(m, m.name+"/configmaps/probe.yaml", "warm"))
	if _, stopErr := op.stop(); err == nil {
		err = stopErr
	}
	if err != nil {
		return fmt.Errorf("warming up: %w", err)
	}
	return m.retire(ctx, e)
}

func (e *benchEnv) client() client.Client { return e.kube.Client() }

func (e *benchEnv) stop() {
	e.gitea.g.stop()
	e.kube.Stop()
	e.git.Stop()
	if os.Getenv(keepEnv) == "" {
		_ = os.RemoveAll(e.dir)
	} else {
		fmt.Println("benchmark files (operator logs, repositories) kept in", e.dir)
	}
}

// buildOperator builds the operator once. The profiling build is the same
// operator.Run behind a wrapper that writes a CPU profile on exit.
func buildOperator(dir string, profiling bool) (string, error) {
	pkg := "./cmd/gitops-reverser"
	if profiling {
		pkg = "./test/bench/profiledoperator"
	}
	out := filepath.Join(dir, "gitops-reverser")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	cmd.Dir = harness.RepoRoot()
	if output, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s: %w\n%s", pkg, err, output)
	}
	return out, nil
}
