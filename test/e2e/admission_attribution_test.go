package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/configbutler/gitops-reverser/internal/admission/observer"
	"github.com/configbutler/gitops-reverser/internal/facts"
	"github.com/configbutler/gitops-reverser/internal/operator"
	"github.com/configbutler/gitops-reverser/test/harness"
)

// TestTheAdmissionPathNamesTheActorOfEachChange runs the attribution cases
// of the audit path on an API server with NO audit webhook: the admission
// observer's reviews, confirmed by the watch, name each change's actor.
// One control plane and one operator serve every case; each case works on
// objects of its own and waits for its commit.
func TestTheAdmissionPathNamesTheActorOfEachChange(t *testing.T) {
	ns := "admission-authors"
	m, _, observerConfig, stop, tune := observerOperatorTuned(t, ns)
	ctx := context.Background()
	dir := m.path + "/" + ns + "/configmaps/"
	alice := actor(t, "alice", map[string][]string{facts.ExtraDisplayName: {"Alice Liddell"}, facts.ExtraEmail: {"alice@example.com"}})
	bob, carol := actor(t, "bob", nil), actor(t, "carol", nil)
	const aliceAuthor = "Alice Liddell <alice@example.com>"
	inGit := func(t *testing.T, name, line string) {
		t.Helper()
		eventually(t, name+" in Git with "+line, func() bool { return containsLine(gitFile(t, m.repo, dir+name+".yaml"), line) })
	}
	goneFromGit := func(t *testing.T, name string) {
		t.Helper()
		eventually(t, name+" gone from Git", func() bool { return gitFile(t, m.repo, dir+name+".yaml") == "" })
	}

	t.Run("create, PUT, merge patch, apply, generateName, delete", func(t *testing.T) {
		require.NoError(t, alice.Create(ctx, configMap(m.ns, "shared", map[string]string{"v": "1"})))
		inGit(t, "shared", `  v: "1"`)
		require.Equal(t, aliceAuthor, authorOf(t, m, dir+"shared.yaml"))

		var cm corev1.ConfigMap
		require.NoError(t, bob.Get(ctx, client.ObjectKey{Namespace: m.ns, Name: "shared"}, &cm))
		cm.Data["v"] = "2"
		require.NoError(t, bob.Update(ctx, &cm))
		inGit(t, "shared", `  v: "2"`)
		require.Equal(t, gitAuthor("bob"), authorOf(t, m, dir+"shared.yaml"))

		robot := actor(t, "system:serviceaccount:ci:deployer", nil)
		patch, _ := json.Marshal(map[string]any{"data": map[string]string{"v": "3"}})
		require.NoError(t, robot.Patch(ctx, configMap(m.ns, "shared", nil), client.RawPatch(types.MergePatchType, patch)))
		inGit(t, "shared", `  v: "3"`)
		require.Equal(t, gitAuthor("system:serviceaccount:ci:deployer"), authorOf(t, m, dir+"shared.yaml"))

		applied := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "applied"}, Data: map[string]string{"v": "1"}}
		require.NoError(t, alice.Patch(ctx, applied, client.Apply, client.FieldOwner("alice"), client.ForceOwnership))
		inGit(t, "applied", `  v: "1"`)
		require.Equal(t, aliceAuthor, authorOf(t, m, dir+"applied.yaml"))
		applied = &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "applied"}, Data: map[string]string{"v": "2"}}
		require.NoError(t, carol.Patch(ctx, applied, client.Apply, client.FieldOwner("carol"), client.ForceOwnership))
		inGit(t, "applied", `  v: "2"`)
		require.Equal(t, gitAuthor("carol"), authorOf(t, m, dir+"applied.yaml"), "an apply that changes is its applier's")

		generated := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, GenerateName: "gen-"}, Data: map[string]string{"v": "1"}}
		require.NoError(t, bob.Create(ctx, generated))
		inGit(t, generated.Name, `  v: "1"`)
		require.Equal(t, gitAuthor("bob"), authorOf(t, m, dir+generated.Name+".yaml"))

		require.NoError(t, bob.Delete(ctx, configMap(m.ns, "shared", nil)))
		goneFromGit(t, "shared")
		require.Equal(t, gitAuthor("bob"), authorOf(t, m, dir+"shared.yaml"))

		// With Redis, each event's settle ended once the reviews published
		// before it were followed, not after the whole settle.
		require.Positive(t, metricSumWhere(t, "gitopsreverser_attribution_settle_barriers_total", map[string]string{"outcome": "reached"}))
	})

	t.Run("the deleter authors a removal another account's finalizer completes", func(t *testing.T) {
		held := configMap(m.ns, "held", map[string]string{"v": "1"})
		held.Finalizers = []string{"example.com/cleanup"}
		require.NoError(t, alice.Create(ctx, held))
		inGit(t, "held", `  v: "1"`)
		require.NoError(t, bob.Delete(ctx, configMap(m.ns, "held", nil)))
		cleaner := actor(t, "system:serviceaccount:"+m.ns+":cleaner", nil)
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": nil}})
		require.NoError(t, cleaner.Patch(ctx, configMap(m.ns, "held", nil), client.RawPatch(types.MergePatchType, patch)))
		goneFromGit(t, "held")
		require.Equal(t, gitAuthor("bob"), authorOf(t, m, dir+"held.yaml"), "the removal is the deleter's:\n%s", gitLog(t, m.repo))
	})

	t.Run("a deletecollection by label is its requester's", func(t *testing.T) {
		batch := []string{"batch-1", "batch-2", "batch-3"}
		for _, name := range batch {
			cm := configMap(m.ns, name, map[string]string{"v": "1"})
			cm.Labels = map[string]string{"batch": "nightly"}
			require.NoError(t, alice.Create(ctx, cm))
		}
		for _, name := range batch {
			inGit(t, name, `  v: "1"`)
		}
		require.NoError(t, bob.DeleteAllOf(ctx, &corev1.ConfigMap{}, client.InNamespace(m.ns), client.MatchingLabels{"batch": "nightly"}))
		for _, name := range batch {
			goneFromGit(t, name)
			require.Equal(t, gitAuthor("bob"), authorOf(t, m, dir+name+".yaml"), "the removal of %s:\n%s", name, gitLog(t, m.repo))
		}
	})

	t.Run("a service account with its own token", func(t *testing.T) {
		byToken := clientFor(t, env.kube.ConfigWithToken(serviceAccountToken(t, m.ns, "robot")))
		require.NoError(t, byToken.Create(ctx, configMap(m.ns, "by-token", map[string]string{"v": "1"})))
		inGit(t, "by-token", `  v: "1"`)
		require.Equal(t, gitAuthor("system:serviceaccount:"+m.ns+":robot"), authorOf(t, m, dir+"by-token.yaml"))
	})

	t.Run("a scale through the subresource is its scaler's", func(t *testing.T) {
		d := webDeployment(m.ns)
		require.NoError(t, alice.Create(ctx, d))
		path := m.path + "/" + ns + "/apps/deployments/web.yaml"
		eventually(t, "the Deployment in Git", func() bool { return containsLine(gitFile(t, m.repo, path), "  replicas: 1") })
		require.Equal(t, aliceAuthor, authorOf(t, m, path))
		var current appsv1.Deployment
		require.NoError(t, carol.Get(ctx, client.ObjectKeyFromObject(d), &current))
		require.NoError(t, carol.SubResource("scale").Update(ctx, &current,
			client.WithSubResourceBody(&autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: 3}})))
		eventually(t, "the scale in Git", func() bool { return containsLine(gitFile(t, m.repo, path), "  replicas: 3") })
		require.Equal(t, gitAuthor("carol"), authorOf(t, m, path))
	})

	t.Run("a dry run and a write a policy refuses make no commit and name nobody later", func(t *testing.T) {
		policy, binding := refusingPolicy(m.ns)
		apply(t, policy, binding)
		t.Cleanup(func() {
			_ = env.kube.Client().Delete(context.Background(), binding)
			_ = env.kube.Client().Delete(context.Background(), policy)
		})
		refused := configMap(m.ns, "refused", map[string]string{"v": "1"})
		refused.Labels = map[string]string{"refuse": "true"}
		require.Eventually(t, func() bool { return apierrors.IsInvalid(alice.Create(ctx, refused.DeepCopy(), client.DryRunAll)) },
			20*time.Second, 200*time.Millisecond, "the policy in force")
		require.NoError(t, alice.Create(ctx, configMap(m.ns, "kept", map[string]string{"v": "1"})))
		inGit(t, "kept", `  v: "1"`)
		before := head(t, m.repo)

		var cm corev1.ConfigMap
		require.NoError(t, bob.Get(ctx, client.ObjectKey{Namespace: m.ns, Name: "kept"}, &cm))
		dry := cm.DeepCopy()
		dry.Data["v"] = "dry"
		require.NoError(t, bob.Update(ctx, dry, client.DryRunAll))
		refusedUpdate := cm.DeepCopy()
		refusedUpdate.Labels = map[string]string{"refuse": "true"}
		refusedUpdate.Data["v"] = "2"
		require.True(t, apierrors.IsInvalid(bob.Update(ctx, refusedUpdate)), "the policy refuses bob's update")

		// carol writes what bob's refused write carried, from the same
		// version: only carol's write was stored, so only she is named.
		sameContent := cm.DeepCopy()
		sameContent.Data["v"] = "2"
		require.NoError(t, carol.Update(ctx, sameContent))
		inGit(t, "kept", `  v: "2"`)
		commits := commitsSince(t, m.repo, before)
		require.Len(t, commits, 1, "the dry run and the refused write made no commit:\n%s", gitLog(t, m.repo))
		require.Equal(t, gitAuthor("carol"), commitAuthor(t, m.repo, commits[0]))
	})

	t.Run("a write another webhook refuses after ours reviewed it names nobody", func(t *testing.T) {
		// bob's writes go to a webhook that cannot be reached and may not
		// fail open: the API server refuses them, after calling ours beside
		// it. carol then stores exactly what bob's refused write carried,
		// from the same version: two reviews match what the watch shows and
		// name different people, so the change is committed unresolved,
		// never bob's.
		dead, err := harness.FreePort()
		require.NoError(t, err)
		refuseBob := refusingWebhook(m.ns, fmt.Sprintf("https://127.0.0.1:%d/refuse", dead), "bob")
		apply(t, refuseBob)
		t.Cleanup(func() { _ = env.kube.Client().Delete(context.Background(), refuseBob) })
		require.NoError(t, alice.Create(ctx, configMap(m.ns, "contested", map[string]string{"v": "1"})))
		inGit(t, "contested", `  v: "1"`)
		var cm corev1.ConfigMap
		require.NoError(t, alice.Get(ctx, client.ObjectKey{Namespace: m.ns, Name: "contested"}, &cm))
		attempt := func() *corev1.ConfigMap {
			a := cm.DeepCopy()
			a.Data["v"] = "2"
			return a
		}
		require.Eventually(t, func() bool { return bob.Update(ctx, attempt(), client.DryRunAll) != nil },
			20*time.Second, 200*time.Millisecond, "the refusing webhook in force")
		require.Error(t, bob.Update(ctx, attempt()), "bob's update is refused")
		same := cm.DeepCopy()
		same.Data["v"] = "2"
		require.NoError(t, carol.Update(ctx, same))
		inGit(t, "contested", `  v: "2"`)
		require.Equal(t, unresolvedAuthor, authorOf(t, m, dir+"contested.yaml"), "\n%s", gitLog(t, m.repo))
	})

	t.Run("concurrent actors are never misattributed", func(t *testing.T) {
		names := make([]string, 10)
		for i := range names {
			names[i] = fmt.Sprintf("contended-%02d", i)
			require.NoError(t, alice.Create(ctx, configMap(m.ns, names[i], map[string]string{"v": "initial"})))
		}
		for _, name := range names {
			inGit(t, name, "  v: initial")
		}
		base := head(t, m.repo)
		written := interleavedUpdates(t, m.ns, names)
		for name, value := range lastValues(written) {
			inGit(t, name, "  v: "+value)
		}
		commits, unresolved, checked := checkAuthorsOfValues(t, m.repo, base, written)
		t.Logf("%d updates, %d commits, %d files checked, 0 misattributed, %d unresolved commits",
			len(written), commits, checked, unresolved)
	})

	t.Run("with the observer unreachable writes succeed and commits are unresolved", func(t *testing.T) {
		stop()
		dead, err := harness.FreePort()
		require.NoError(t, err)
		unreachable := fmt.Sprintf("https://127.0.0.1:%d", dead)
		startOperatorWith(t, func(o *operator.Options) {
			tune(o)
			o.Attribution.Observer.URL = unreachable
		})
		waitReady(t, m.ns, m.target)
		eventually(t, "the observer registered at the unreachable address", func() bool {
			var vwc admissionregistrationv1.ValidatingWebhookConfiguration
			if err := env.kube.Client().Get(ctx, client.ObjectKey{Name: observerConfig}, &vwc); err != nil || len(vwc.Webhooks) == 0 {
				return false
			}
			url := vwc.Webhooks[0].ClientConfig.URL
			return url != nil && *url == unreachable+observer.Path
		})
		require.NoError(t, bob.Create(ctx, configMap(m.ns, "unobserved", map[string]string{"v": "1"})))
		inGit(t, "unobserved", `  v: "1"`)
		require.Equal(t, unresolvedAuthor, authorOf(t, m, dir+"unobserved.yaml"))
	})
}

// refusingWebhook is a validating webhook at url, which nothing serves,
// that may not fail open: every write user makes to a ConfigMap in ns is
// refused once the API server has called the other webhooks beside it.
func refusingWebhook(ns, url, user string) *admissionregistrationv1.ValidatingWebhookConfiguration {
	fail, none := admissionregistrationv1.Fail, admissionregistrationv1.SideEffectClassNone
	timeout := int32(2)
	return &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: ns + "-refuse-" + user},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "refuse.e2e.example.com",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url},
			FailurePolicy:           &fail,
			SideEffects:             &none,
			TimeoutSeconds:          &timeout,
			AdmissionReviewVersions: []string{"v1"},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
			MatchConditions:         []admissionregistrationv1.MatchCondition{{Name: "by-user", Expression: "request.userInfo.username == '" + user + "'"}},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}},
		}}}
}

// webDeployment is a one-replica Deployment ns/web (nothing runs it: the
// harness has no controller manager).
func webDeployment(ns string) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}}}}}
}
