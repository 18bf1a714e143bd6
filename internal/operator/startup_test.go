package operator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/test/harness"
)

// TestAnOperatorStartedWhileTheAPIServerIsDownWaitsAndThenMirrors starts the
// operator while the real kube-apiserver is stopped: it stays alive and not
// ready (instead of exiting), and once the API server is back it becomes
// ready and mirrors a ConfigMap.
func TestAnOperatorStartedWhileTheAPIServerIsDownWaitsAndThenMirrors(t *testing.T) {
	kube, git := startMirrorEnv(t)
	ctx := context.Background()

	require.NoError(t, kube.StopAPIServer())
	port, err := harness.FreePort()
	require.NoError(t, err)
	probes := "http://127.0.0.1:" + strconv.Itoa(port)
	pprofPort, err := harness.FreePort()
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	run := &operatorRun{exited: make(chan struct{})}
	reg := prometheus.NewRegistry()
	go func() {
		defer close(run.exited)
		run.err = Run(runCtx, Options{
			Config: kube.Config(), MetricsAddr: "0", ProbeAddr: "127.0.0.1:" + strconv.Itoa(port),
			PprofAddr:         "127.0.0.1:" + strconv.Itoa(pprofPort),
			OperatorNamespace: "default", Registry: reg, SkipNameValidation: true,
			APIServerBackoff: wait.Backoff{Duration: 50 * time.Millisecond, Factor: 2, Jitter: 0.5, Steps: 5, Cap: 500 * time.Millisecond},
		})
	}()
	t.Cleanup(func() {
		stop()
		<-run.exited
		require.NoError(t, run.err)
	})

	run.waitFor(t, "readyz to say the operator waits for the API server", func() bool {
		code, body := get(probes + "/readyz")
		return code == http.StatusServiceUnavailable && strings.Contains(body, "waiting for the API server")
	})
	code, _ := get(probes + "/healthz")
	require.Equal(t, http.StatusOK, code, "alive while waiting")

	require.NoError(t, kube.StartAPIServer())
	run.waitFor(t, "readyz OK once the API server answers", func() bool {
		code, _ := get(probes + "/readyz")
		return code == http.StatusOK
	})
	// --pprof-bind-address serves the profiles once the manager runs.
	run.waitFor(t, "the pprof index on --pprof-bind-address", func() bool {
		code, body := get(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/", pprofPort))
		return code == http.StatusOK && strings.Contains(body, "heap")
	})
	require.NoError(t, kube.Client().Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "sentinel"}, Data: map[string]string{"k": "v"}}))
	run.waitFor(t, "the sentinel ConfigMap in Git", func() bool {
		_, err := git.Git("mirror", "cat-file", "-e", "main:clusters/dev/team-a/configmaps/sentinel.yaml")
		return err == nil
	})

	families, err := reg.Gather()
	require.NoError(t, err)
	var names []string
	for _, f := range families {
		names = append(names, f.GetName())
	}
	require.Contains(t, names, "gitopsreverser_placement_refusals_total", "scraped with zeros from start")
}

// startMirrorEnv starts a control plane and a Git server, with mirrorSetup
// applied.
func startMirrorEnv(t *testing.T) (*harness.Kube, *harness.GitServer) {
	t.Helper()
	kube, err := harness.StartKube(harness.KubeOptions{})
	require.NoError(t, err)
	t.Cleanup(kube.Stop)
	git, err := harness.StartGitServer(t.TempDir(), harness.GitServerOptions{HTTPUsername: "mirror", HTTPPassword: "secret"})
	require.NoError(t, err)
	t.Cleanup(git.Stop)
	_, err = git.CreateBareRepo("mirror")
	require.NoError(t, err)
	for _, obj := range mirrorSetup(git.HTTPURL("mirror")) {
		require.NoError(t, kube.Client().Create(context.Background(), obj), "%T %s", obj, obj.GetName())
	}
	return kube, git
}

// operatorRun is an operator running in the test; err is set once exited
// is closed.
type operatorRun struct {
	exited chan struct{}
	err    error
}

// waitFor waits for cond, failing at once if the operator returns.
func (r *operatorRun) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		select {
		case <-r.exited:
			t.Fatalf("the operator returned (%v) before %s", r.err, what)
		case <-time.After(100 * time.Millisecond):
		}
		require.True(t, time.Now().Before(deadline), "no %s within 60s", what)
	}
}

func get(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// mirrorSetup mirrors the ConfigMaps of team-a into clusters/dev of the
// repository at url, over smart HTTP.
func mirrorSetup(url string) []client.Object {
	inTeamA := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: "team-a", Name: name} }
	return []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}},
		&v1alpha3.ClusterProvider{ObjectMeta: metav1.ObjectMeta{Name: v1alpha3.DefaultClusterProvider},
			Spec: v1alpha3.ClusterProviderSpec{AllowedNamespaces: &v1alpha3.NamespacePolicy{Names: []string{"team-a"}}}},
		&corev1.Secret{ObjectMeta: inTeamA("git-credentials"), StringData: map[string]string{"username": "mirror", "password": "secret"}},
		&v1alpha3.GitProvider{ObjectMeta: inTeamA("git"), Spec: v1alpha3.GitProviderSpec{
			URL: url, Forge: &v1alpha3.ForgeSpec{Type: v1alpha3.ForgeGit}, AllowedBranches: []string{"main"},
			SecretRef: &v1alpha3.LocalObjectReference{Name: "git-credentials"},
			Push:      v1alpha3.PushSpec{CommitWindow: &metav1.Duration{Duration: 100 * time.Millisecond}},
		}},
		&v1alpha3.GitTarget{ObjectMeta: inTeamA("mirror"), Spec: v1alpha3.GitTargetSpec{
			ProviderRef: v1alpha3.GitProviderReference{Name: "git"}, Branch: "main", Path: "clusters/dev"}},
		&v1alpha3.WatchRule{ObjectMeta: inTeamA("configmaps"), Spec: v1alpha3.WatchRuleSpec{
			TargetRef: v1alpha3.TargetReference{Name: "mirror"},
			Rules:     []v1alpha3.NamespacedResourceRule{{ResourceSelector: v1alpha3.ResourceSelector{Resources: []string{"configmaps"}}}},
		}},
	}
}

// TestOnlyNoAnswerOrNotServingYetIsWaitedFor: a refused connection and the
// answers of an API server that is starting or overloaded are waited out;
// any other answer is the next step's to report.
func TestOnlyNoAnswerOrNotServingYetIsWaitedFor(t *testing.T) {
	gr := schema.GroupResource{}
	for _, tc := range []struct {
		name string
		err  error
		wait bool
	}{
		{"answered", nil, false},
		{"connection refused", &url.Error{Op: "Get", URL: "https://127.0.0.1:6443/api", Err: syscall.ECONNREFUSED}, true},
		{"starting", apierrors.NewServiceUnavailable("not ready"), true},
		{"internal error", apierrors.NewInternalError(errors.New("etcd")), true},
		{"too many requests", apierrors.NewTooManyRequests("slow down", 1), true},
		{"unauthorized", apierrors.NewUnauthorized("who are you"), false},
		{"forbidden", apierrors.NewForbidden(gr, "", errors.New("no")), false},
		{"wrapped status", fmt.Errorf("discovery: %w", apierrors.NewServiceUnavailable("not ready")), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.wait, apiServerUnavailable(tc.err))
		})
	}
}
