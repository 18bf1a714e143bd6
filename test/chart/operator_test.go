package chart

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/operator"
	"github.com/configbutler/gitops-reverser/test/harness"
)

// operatorLog holds every line the in-process operators logged, debug
// level included, for the tests that scan it for Secret values.
var operatorLog harness.SyncBuffer

// init keeps the operator's log quiet unless CHART_TEST_LOG=debug, and
// captures all of it in operatorLog.
func init() {
	harness.SetLoggerCapturing("CHART_TEST_LOG", &operatorLog)
}

// operatorOptions run the operator as the ServiceAccount namespace/name
// (impersonated), with the flags the release's rendered Deployment (in
// objs) passes that matter to its RBAC.
func operatorOptions(t *testing.T, objs []*unstructured.Unstructured, namespace, serviceAccount string) operator.Options {
	t.Helper()
	return operator.Options{
		Config:               env.kube.ConfigAsServiceAccount(namespace, serviceAccount),
		CredentialNamespaces: credentialNamespacesFlag(t, objs),
		MetricsAddr:          "0",
		ProbeAddr:            "0",
		LeaderElect:          true, // exercises the chart's Lease Role
		OperatorNamespace:    namespace,
		TargetResync:         2 * time.Second,
		Registry:             prometheus.NewRegistry(),
		SkipNameValidation:   true,
		PermissionWait:       time.Second,
	}
}

func startOperator(t *testing.T, objs []*unstructured.Unstructured, namespace, serviceAccount string) (stop func() error) {
	t.Helper()
	return startOperatorWith(t, operatorOptions(t, objs, namespace, serviceAccount))
}

// credentialNamespacesFlag is the --credential-namespaces of the rendered
// Deployment in objs, nil when it passes none.
func credentialNamespacesFlag(t *testing.T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	containers, _, err := unstructured.NestedSlice(oneOfKind(t, objs, "Deployment").Object, "spec", "template", "spec", "containers")
	require.NoError(t, err)
	args, _, err := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
	require.NoError(t, err)
	for _, arg := range args {
		if value, ok := strings.CutPrefix(arg, "--credential-namespaces="); ok {
			return strings.Split(value, ",")
		}
	}
	return nil
}

// startOperatorWith runs the operator in process with opts until the
// returned stop is called.
func startOperatorWith(t *testing.T, opts operator.Options) (stop func() error) {
	t.Helper()
	c, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- operator.Run(c, opts) }()
	stopped := false
	stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(30 * time.Second):
			return fmt.Errorf("the operator did not stop within 30s")
		}
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

func create(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		err := env.kube.Client().Create(ctx(t), o)
		if !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err, "creating %T %s", o, o.GetName())
		}
	}
}

func targetConditions(t *testing.T, ns, name string) []metav1.Condition {
	t.Helper()
	var gt v1alpha3.GitTarget
	if err := env.kube.Client().Get(ctx(t), client.ObjectKey{Namespace: ns, Name: name}, &gt); err != nil {
		return nil
	}
	return gt.Status.Conditions
}

func gitFile(repo, path string) string {
	out, err := env.git.ReadFile(repo, "main", path)
	if err != nil {
		return ""
	}
	return out
}

// TestOperatorRunsWithExactlyTheChartsRBAC installs the chart (with a token
// credentials Secret the chart creates in the GitProvider's namespace) and
// runs the operator as the chart's ServiceAccount: first without the
// ClusterRoleBinding, where nothing may reach Git, then with it, where a
// ConfigMap is mirrored end to end, and then with a WatchRule naming a type
// rbac.mirroredResources does not grant, which the GitTarget must report
// until an upgrade grants it.
func TestOperatorRunsWithExactlyTheChartsRBAC(t *testing.T) {
	const (
		release, opNS, team, repo = "op", "gitops-reverser", "team-a", "team-a"
		sa                        = "op-gitops-reverser"
		target                    = "mirror"
		path                      = "clusters/team-a"
	)
	values := fmt.Sprintf("credentials: {type: token, namespace: %s, token: {username: %s, token: %s}}\n", team, gitUser, gitPassword)
	objs := render(t, release, opNS, values)
	_, err := env.git.CreateBareRepo(repo)
	require.NoError(t, err)

	// Everything but the ClusterRoleBinding.
	ensureNamespace(t, team)
	install(t, objs, "ClusterRoleBinding")
	create(t,
		localClusterProvider(),
		&v1alpha3.GitProvider{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "repo"},
			Spec: v1alpha3.GitProviderSpec{
				URL:             env.git.HTTPURL(repo),
				Forge:           &v1alpha3.ForgeSpec{Type: v1alpha3.ForgeGit},
				SecretRef:       &v1alpha3.LocalObjectReference{Name: "git-credentials"}, // the chart's Secret
				AllowedBranches: []string{"main"},
				Push:            v1alpha3.PushSpec{CommitWindow: &metav1.Duration{Duration: 300 * time.Millisecond}},
			}},
		&v1alpha3.GitTarget{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: target},
			Spec: v1alpha3.GitTargetSpec{ProviderRef: v1alpha3.GitProviderReference{Name: "repo"}, Branch: "main", Path: path}},
		&v1alpha3.WatchRule{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "rule"},
			Spec: v1alpha3.WatchRuleSpec{TargetRef: v1alpha3.TargetReference{Name: target},
				Rules: []v1alpha3.NamespacedResourceRule{{ResourceSelector: v1alpha3.ResourceSelector{Resources: []string{"configmaps"}}}}}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "app"}, Data: map[string]string{"LOG_LEVEL": "info"}},
	)

	t.Run("without the ClusterRoleBinding nothing reaches Git", func(t *testing.T) {
		asSA, err := env.kube.ClientAs("system:serviceaccount:"+opNS+":"+sa, "system:serviceaccounts", "system:serviceaccounts:"+opNS)
		require.NoError(t, err)
		err = asSA.List(ctx(t), &v1alpha3.GitTargetList{})
		require.True(t, apierrors.IsForbidden(err), "listing GitTargets as the ServiceAccount without the binding: %v", err)

		runCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		err = operator.Run(runCtx, operatorOptions(t, objs, opNS, sa))
		require.ErrorContains(t, err, "list, watch gittargets.configbutler.ai cluster-wide", "the operator names what it lacks")
		require.ErrorContains(t, err, "patch gittargets.configbutler.ai/status cluster-wide")
		require.NotContains(t, err.Error(), "leases", "the chart's Role for leader election is bound")
		ready := meta.FindStatusCondition(targetConditions(t, team, target), v1alpha3.ConditionReady)
		require.True(t, ready == nil || ready.Status != metav1.ConditionTrue, "GitTarget Ready without the binding: %+v", ready)
		_, err = env.git.Git(repo, "rev-parse", "--verify", "main")
		require.Error(t, err, "no commit may reach the remote without the binding")
	})

	t.Run("with the chart's RBAC a ConfigMap is mirrored", func(t *testing.T) {
		install(t, byKind(objs, "ClusterRoleBinding"))
		stop := startOperator(t, objs, opNS, sa)
		require.Eventually(t, func() bool {
			c := meta.FindStatusCondition(targetConditions(t, team, target), v1alpha3.ConditionReady)
			return c != nil && c.Status == metav1.ConditionTrue
		}, 60*time.Second, 200*time.Millisecond, "GitTarget Ready as the chart's ServiceAccount")
		file := path + "/" + team + "/configmaps/app.yaml"
		require.Eventually(t, func() bool { return strings.Contains(gitFile(repo, file), "LOG_LEVEL: info") },
			30*time.Second, 200*time.Millisecond, "the ConfigMap in Git at %s", file)

		t.Run("a type the chart does not grant is reported, then mirrored once granted", func(t *testing.T) {
			forbiddenUntilGranted(t, release, opNS, values, team, target, repo, path)
		})
		require.NoError(t, stop())
	})
}

// forbiddenUntilGranted has the running operator's WatchRule claim Services,
// which the chart's default rbac.mirroredResources does not grant: the
// GitTarget must say so (StreamsRunning=False/SourceForbidden, naming the
// resource, namespace and verbs, Stalled) and, after an upgrade that grants
// it, recover and mirror the Service without a restart.
func forbiddenUntilGranted(t *testing.T, release, opNS, values, team, target, repo, path string) {
	create(t, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "web"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}})
	// The operator writes the rule's status meanwhile: read it again on a
	// conflict.
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var rule v1alpha3.WatchRule
		if err := env.kube.Client().Get(ctx(t), client.ObjectKey{Namespace: team, Name: "rule"}, &rule); err != nil {
			return err
		}
		rule.Spec.Rules[0].ResourceSelector.Resources = []string{"configmaps", "services"}
		return env.kube.Client().Update(ctx(t), &rule)
	}))

	var streams *metav1.Condition
	require.Eventually(t, func() bool {
		streams = meta.FindStatusCondition(targetConditions(t, team, target), v1alpha3.ConditionStreamsRunning)
		return streams != nil && streams.Reason == v1alpha3.ReasonSourceForbidden
	}, 60*time.Second, 200*time.Millisecond, "StreamsRunning=False/SourceForbidden for the ungranted services stream; conditions: %+v",
		targetConditions(t, team, target))
	require.Equal(t, metav1.ConditionFalse, streams.Status)
	require.Contains(t, streams.Message, "the operator may not list/watch services in namespace "+team)
	require.Contains(t, streams.Message, "rbac.mirroredResources")
	t.Log("StreamsRunning:", streams.Message)
	require.Contains(t, streams.Message, `User "system:serviceaccount:`+opNS+":"+release+`-gitops-reverser" cannot`)
	conds := targetConditions(t, team, target)
	require.Equal(t, metav1.ConditionFalse, meta.FindStatusCondition(conds, v1alpha3.ConditionReady).Status)
	require.Equal(t, metav1.ConditionTrue, meta.FindStatusCondition(conds, v1alpha3.ConditionStalled).Status,
		"only a grant helps, so the target is Stalled rather than Reconciling")

	// helm upgrade with the type granted: only the ClusterRole changes.
	granted := values + "rbac: {mirroredResources: [{apiGroups: [\"\"], resources: [configmaps, services]}]}\n"
	install(t, byKind(render(t, release, opNS, granted), "ClusterRole"))
	file := path + "/" + team + "/services/web.yaml"
	require.Eventually(t, func() bool { return strings.Contains(gitFile(repo, file), "port: 80") },
		90*time.Second, 200*time.Millisecond, "the Service in Git at %s once granted", file)
	require.Eventually(t, func() bool {
		c := meta.FindStatusCondition(targetConditions(t, team, target), v1alpha3.ConditionReady)
		return c != nil && c.Status == metav1.ConditionTrue
	}, 30*time.Second, 200*time.Millisecond, "GitTarget Ready again once granted; conditions: %+v", targetConditions(t, team, target))
}

func ruleStatus(t *testing.T, ns, name string) v1alpha3.RuleStatus {
	t.Helper()
	var r v1alpha3.WatchRule
	_ = env.kube.Client().Get(ctx(t), client.ObjectKey{Namespace: ns, Name: name}, &r)
	return r.Status
}
