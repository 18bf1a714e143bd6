package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/operator"
	"github.com/configbutler/gitops-reverser/test/harness"
)

// operatorLog is everything the suite's operators logged, debug level
// included; the suite ends by scanning it for Secret values.
var operatorLog harness.SyncBuffer

// init keeps the operator's log quiet unless E2E_LOG=debug, and captures
// all of it in operatorLog.
func init() {
	harness.SetLoggerCapturing("E2E_LOG", &operatorLog)
}

// operatorProcess is one run of the operator in this process.
type operatorProcess struct {
	cancel   context.CancelFunc
	done     chan error
	registry *prometheus.Registry
}

// lastRegistry is the metrics registry of the most recent operator run.
var lastRegistry *prometheus.Registry

// metricSum adds up every series of a metric family in the last run
// (counters and gauges by value, histograms by observation count).
func metricSum(t *testing.T, name string) float64 {
	t.Helper()
	return metricSumWhere(t, name, nil)
}

// metricSumWhere is metricSum over the series whose labels include want.
func metricSumWhere(t *testing.T, name string, want map[string]string) float64 {
	t.Helper()
	var sum float64
	for _, m := range seriesWhere(t, name, want) {
		switch {
		case m.GetCounter() != nil:
			sum += m.GetCounter().GetValue()
		case m.GetGauge() != nil:
			sum += m.GetGauge().GetValue()
		case m.GetHistogram() != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum
}

// seriesExists tells whether the last run has a series of the metric
// family name whose labels include want, whatever its value.
func seriesExists(t *testing.T, name string, want map[string]string) bool {
	t.Helper()
	return len(seriesWhere(t, name, want)) > 0
}

// seriesWhere are the last run's series of the metric family name whose
// labels include want.
func seriesWhere(t *testing.T, name string, want map[string]string) []*dto.Metric {
	t.Helper()
	families, err := lastRegistry.Gather()
	require.NoError(t, err)
	var out []*dto.Metric
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if includes(labels, want) {
				out = append(out, m)
			}
		}
	}
	return out
}

func includes(labels, want map[string]string) bool {
	for k, v := range want {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// startOperator runs the operator until the returned stop is called (or
// the test ends). Tests run one after another, so one operator runs at a
// time.
func startOperator(t *testing.T) (stop func()) {
	t.Helper()
	return startOperatorWith(t, nil)
}

// startOperatorWith is startOperator with options changed by tune.
func startOperatorWith(t *testing.T, tune func(*operator.Options)) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p := &operatorProcess{cancel: cancel, done: make(chan error, 1), registry: prometheus.NewRegistry()}
	lastRegistry = p.registry
	opts := operator.Options{
		Config:            env.kube.Config(),
		MetricsAddr:       "0",
		ProbeAddr:         "0",
		LeaderElect:       true,
		OperatorNamespace: "default",
		TargetResync:      2 * time.Second,
		// status.rateLimit follows a commit within the test's patience.
		ProviderBudgetRefresh: time.Second,
		Registry:              p.registry,
		SkipNameValidation:    true,
	}
	if tune != nil {
		tune(&opts)
	}
	go func() { p.done <- operator.Run(ctx, opts) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			p.cancel()
			select {
			case err := <-p.done:
				require.NoError(t, err)
			case <-time.After(30 * time.Second):
				t.Error("the operator did not stop within 30s")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// edit reads obj (its name set) and writes it back changed by change,
// again on a conflict: the operator writes the status of the kinds it
// reconciles meanwhile.
func edit(t *testing.T, obj client.Object, change func()) {
	t.Helper()
	ctx := context.Background()
	key := client.ObjectKeyFromObject(obj)
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.kube.Client().Get(ctx, key, obj); err != nil {
			return err
		}
		change()
		return env.kube.Client().Update(ctx, obj)
	}))
}

func apply(t *testing.T, objs ...client.Object) {
	t.Helper()
	ctx := context.Background()
	for _, obj := range objs {
		err := env.kube.Client().Create(ctx, obj)
		if apierrors.IsAlreadyExists(err) {
			continue
		}
		require.NoError(t, err, "creating %T %s", obj, obj.GetName())
	}
}

// mirrorSetup is one namespace mirrored into one fresh repository.
type mirrorSetup struct {
	ns, repo, target, path string
}

// newMirror creates a namespace, a repository, credentials, a
// ClusterProvider admitting the namespace, a GitProvider and a GitTarget,
// and a WatchRule for the given resources (none: no rule).
func newMirror(t *testing.T, name string, resources ...string) mirrorSetup {
	t.Helper()
	m := mirrorSetup{ns: name, repo: name, target: "mirror", path: "clusters/" + name}
	_, err := env.git.CreateBareRepo(m.repo)
	require.NoError(t, err)
	apply(t,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: m.ns}},
		&v1alpha3.ClusterProvider{ObjectMeta: metav1.ObjectMeta{Name: "default"},
			Spec: v1alpha3.ClusterProviderSpec{AllowedNamespaces: &v1alpha3.NamespacePolicy{Selector: &metav1.LabelSelector{}}}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "git-credentials"},
			StringData: map[string]string{"username": gitUser, "password": gitPassword}},
		gitProvider(m.ns, "repo", env.git.HTTPURL(m.repo)),
		&v1alpha3.GitTarget{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: m.target},
			Spec: v1alpha3.GitTargetSpec{ProviderRef: v1alpha3.GitProviderReference{Name: "repo"}, Branch: "main", Path: m.path}},
	)
	if len(resources) > 0 {
		apply(t, watchRule(m.ns, "rule", m.target, resources...))
	}
	return m
}

func gitProvider(ns, name, url string) *v1alpha3.GitProvider {
	return &v1alpha3.GitProvider{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha3.GitProviderSpec{
			URL:             url,
			Forge:           &v1alpha3.ForgeSpec{Type: v1alpha3.ForgeGit},
			SecretRef:       &v1alpha3.LocalObjectReference{Name: "git-credentials"},
			AllowedBranches: []string{"main"},
			Push:            v1alpha3.PushSpec{CommitWindow: &metav1.Duration{Duration: 300 * time.Millisecond}},
		}}
}

func watchRule(ns, name, target string, resources ...string) *v1alpha3.WatchRule {
	return &v1alpha3.WatchRule{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha3.WatchRuleSpec{TargetRef: v1alpha3.TargetReference{Name: target},
			Rules: []v1alpha3.NamespacedResourceRule{{ResourceSelector: v1alpha3.ResourceSelector{Resources: resources}}}}}
}

func configMap(ns, name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}
}

// gitFile reads a file at the branch head; "" when it does not exist.
func gitFile(t *testing.T, repo, path string) string {
	t.Helper()
	out, err := env.git.ReadFile(repo, "main", path)
	if err != nil {
		return ""
	}
	return out
}

func commitCount(t *testing.T, repo string) int {
	t.Helper()
	out, err := env.git.Git(repo, "rev-list", "--count", "main")
	if err != nil {
		return 0
	}
	var n int
	_, _ = fmt.Sscan(strings.TrimSpace(out), &n)
	return n
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	eventuallyWithin(t, 30*time.Second, what, cond)
}

// eventuallyWithin is eventually with a patience of its own, for a step a
// freshly started operator reaches only after reconciling every GitTarget
// the suite has left in the cluster.
func eventuallyWithin(t *testing.T, patience time.Duration, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, patience, 100*time.Millisecond, what)
}

// waitReady waits for a GitTarget to report Ready=True.
func waitReady(t *testing.T, ns, name string) {
	t.Helper()
	eventually(t, "GitTarget "+ns+"/"+name+" Ready", func() bool {
		return conditionStatus(t, ns, name, v1alpha3.ConditionReady) == metav1.ConditionTrue
	})
}

func targetCondition(t *testing.T, ns, name, typ string) *metav1.Condition {
	t.Helper()
	var gt v1alpha3.GitTarget
	if err := env.kube.Client().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &gt); err != nil {
		return nil
	}
	return meta.FindStatusCondition(gt.Status.Conditions, typ)
}

func conditionStatus(t *testing.T, ns, name, typ string) metav1.ConditionStatus {
	if c := targetCondition(t, ns, name, typ); c != nil {
		return c.Status
	}
	return ""
}

func containsLine(content, line string) bool {
	for _, l := range strings.Split(content, "\n") {
		if l == line {
			return true
		}
	}
	return false
}

// gitLog is the branch history with changed files, for failure messages.
func gitLog(t *testing.T, repo string) string {
	t.Helper()
	out, _ := env.git.Git(repo, "log", "--format=%h %s", "--name-status", "main")
	return out
}

// pushExternalCommit commits a file to main, as a human would.
func pushExternalCommit(t *testing.T, repo, path, content string) {
	t.Helper()
	_, err := env.git.CommitFiles(repo, map[string]string{path: content}, "human edit")
	require.NoError(t, err)
}
