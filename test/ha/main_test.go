// Package ha runs three operator processes (--replica-count=3) against one
// real kube-apiserver, one redis-server and one Git server, and proves what
// high availability promises by what lands in Git and in Redis: every
// branch claimed by exactly one replica, a killed owner's branches taken
// over and moving only forward, a stopping replica handing its branches
// over by releasing its claims, and a returning one taking back only what
// rendezvous hashing gives it.
package ha

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/test/harness"
)

const (
	gitUser     = "mirror"
	gitPassword = "s3cret-token"
	// keepEnv keeps the suite's directory (operator logs, repositories).
	keepEnv = "GITOPS_REVERSER_HA_KEEP"
)

// env is shared by the package's tests: one control plane, one Redis, one
// Git server and the operator binary; each test uses its own namespaces,
// repository and Redis key prefix.
var env struct {
	dir        string
	kube       *harness.Kube
	git        *harness.GitServer
	redis      *harness.Redis
	kubeconfig string
	binary     string
	// audit is where the API server posts audit events: the attribution
	// test points it at its replicas.
	audit *auditSetup
}

// init keeps the harness's own log (controller-runtime's, of the test
// process) quiet unless HA_LOG=debug; the operators log to files.
func init() { harness.SetLogger("HA_LOG") }

func TestMain(m *testing.M) { harness.Exit(run(m)) }

func run(m *testing.M) (int, error) {
	dir, err := os.MkdirTemp("", "gitops-reverser-ha-")
	if err != nil {
		return 0, fmt.Errorf("creating the suite's directory: %w", err)
	}
	env.dir = dir
	defer func() {
		if os.Getenv(keepEnv) == "" {
			_ = os.RemoveAll(dir)
		} else {
			fmt.Println("operator logs and repositories kept in", dir)
		}
	}()
	// The build comes first: it is the longest step, and nothing else is
	// running yet to compete for the CPU.
	if env.binary, err = buildOperator(dir); err != nil {
		return 0, err
	}
	if env.git, err = harness.StartGitServer(filepath.Join(dir, "git"),
		harness.GitServerOptions{HTTPUsername: gitUser, HTTPPassword: gitPassword}); err != nil {
		return 0, fmt.Errorf("starting the git server: %w", err)
	}
	defer env.git.Stop()
	redisDir := filepath.Join(dir, "redis")
	if err := os.MkdirAll(redisDir, 0o755); err != nil {
		return 0, fmt.Errorf("creating the Redis directory: %w", err)
	}
	if env.redis, err = harness.StartRedis(redisDir); err != nil {
		return 0, fmt.Errorf("starting redis-server: %w", err)
	}
	defer env.redis.Stop()
	if env.audit, err = prepareAudit(dir); err != nil {
		return 0, err
	}
	defer env.audit.balancer.close()
	if env.kube, err = harness.StartKube(env.audit.kubeOptions()); err != nil {
		return 0, fmt.Errorf("starting the control plane: %w", err)
	}
	defer env.kube.Stop()
	if err := writeKubeconfig(dir); err != nil {
		return 0, err
	}
	// Every test's namespaces may be mirrored from the local cluster.
	provider := &v1alpha3.ClusterProvider{ObjectMeta: metav1.ObjectMeta{Name: v1alpha3.DefaultClusterProvider},
		Spec: v1alpha3.ClusterProviderSpec{AllowedNamespaces: &v1alpha3.NamespacePolicy{Selector: &metav1.LabelSelector{}}}}
	if err := env.kube.Client().Create(context.Background(), provider); err != nil {
		return 0, fmt.Errorf("creating the default ClusterProvider: %w", err)
	}
	return m.Run(), nil
}

// writeKubeconfig writes the admin kubeconfig the operator processes use.
func writeKubeconfig(dir string) error {
	kubeconfig, err := env.kube.Kubeconfig()
	if err != nil {
		return err
	}
	env.kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(env.kubeconfig, kubeconfig, 0o600); err != nil {
		return fmt.Errorf("writing the operators' kubeconfig: %w", err)
	}
	return nil
}

// buildOperator builds ./cmd/gitops-reverser once for every replica.
func buildOperator(dir string) (string, error) {
	out := filepath.Join(dir, "gitops-reverser")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./cmd/gitops-reverser")
	cmd.Dir = harness.RepoRoot()
	if output, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the operator: %w\n%s", err, output)
	}
	return out, nil
}
