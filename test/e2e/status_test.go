package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/operator"
	"github.com/configbutler/gitops-reverser/test/harness"
)

// TestStatusRecoversOnceUnsupportedContentIsRemoved: a file that is not a
// Kubernetes object refuses the path; once a human removes it, the
// ConfigMap commits and the status says so, with the new commit as
// status.lastCommit (it used to keep naming the removed file).
func TestStatusRecoversOnceUnsupportedContentIsRemoved(t *testing.T) {
	m := newMirror(t, "unsupported-cleared", "configmaps")
	notes := m.path + "/notes.yaml"
	pushExternalCommit(t, m.repo, notes, "just: a note\n")
	startOperator(t)
	apply(t, configMap(m.ns, "app", map[string]string{"k": "v"}))
	eventually(t, "GitPathAccepted=False/UnsupportedContent", func() bool {
		c := targetCondition(t, m.ns, m.target, v1alpha3.ConditionGitPathAccepted)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == v1alpha3.ReasonUnsupportedContent
	})

	removeExternally(t, m.repo, notes)
	eventually(t, "the ConfigMap in Git", func() bool {
		return gitFile(t, m.repo, m.path+"/unsupported-cleared/configmaps/app.yaml") != ""
	})
	head, err := env.git.Git(m.repo, "rev-parse", "main")
	require.NoError(t, err)
	eventually(t, "GitPathAccepted=True and status.lastCommit at the new head", func() bool {
		var gt v1alpha3.GitTarget
		if err := env.kube.Client().Get(context.Background(), client.ObjectKey{Namespace: m.ns, Name: m.target}, &gt); err != nil {
			return false
		}
		return conditionStatus(t, m.ns, m.target, v1alpha3.ConditionGitPathAccepted) == metav1.ConditionTrue &&
			gt.Status.LastCommit != nil && gt.Status.LastCommit.SHA == head
	})
	waitReady(t, m.ns, m.target)
}

// TestStatusRecoversWhenTheRetryHasNothingToCommit: the replay after a
// restart meets a human's non-Kubernetes file while its objects are already
// in Git; once the human removes the file the retried replay succeeds with
// nothing to commit, and the status must still return to GitPathAccepted=True
// (it kept naming the removed file until some later commit).
func TestStatusRecoversWhenTheRetryHasNothingToCommit(t *testing.T) {
	m := newMirror(t, "unsupported-noop", "configmaps")
	apply(t, configMap(m.ns, "app", map[string]string{"k": "v"}))
	stop := startOperator(t)
	eventually(t, "the ConfigMap in Git", func() bool {
		return gitFile(t, m.repo, m.path+"/unsupported-noop/configmaps/app.yaml") != ""
	})
	waitReady(t, m.ns, m.target)
	stop()

	notes := m.path + "/notes.yaml"
	pushExternalCommit(t, m.repo, notes, "just: a note\n")
	startOperator(t)
	eventually(t, "GitPathAccepted=False/UnsupportedContent", func() bool {
		c := targetCondition(t, m.ns, m.target, v1alpha3.ConditionGitPathAccepted)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == v1alpha3.ReasonUnsupportedContent
	})
	removeExternally(t, m.repo, notes)
	head, err := env.git.Git(m.repo, "rev-parse", "main")
	require.NoError(t, err)
	eventually(t, "GitPathAccepted=True", func() bool {
		return conditionStatus(t, m.ns, m.target, v1alpha3.ConditionGitPathAccepted) == metav1.ConditionTrue
	})
	waitReady(t, m.ns, m.target)
	after, err := env.git.Git(m.repo, "rev-parse", "main")
	require.NoError(t, err)
	require.Equal(t, head, after, "the retry had nothing to commit:\n%s", gitLog(t, m.repo))
}

// removeExternally deletes a file from main in a commit of its own, as a
// human would.
func removeExternally(t *testing.T, repo, path string) {
	t.Helper()
	_, err := env.git.RemoveFiles(repo, []string{path}, "human removes "+path)
	require.NoError(t, err)
}

// TestEveryRefusedObjectIsVisible: a Secret without encryption and a
// ConfigMap whose file holds an encrypted document are not written; the
// GitTarget says so (Ready=False, ObjectsWritten names them, status.refused
// counts them), its WatchRule says the target is not Ready, each has an
// Event and the refusal metric counts them. Deleting them clears it all. A
// ConfigMap named kustomization, whose canonical file kustomize would read
// as its build file, is written under the escaped name _kustomization.yaml.
func TestEveryRefusedObjectIsVisible(t *testing.T) {
	m := newMirror(t, "refused", "configmaps", "secrets")
	// An encrypted document of a type nobody mirrors, where the ConfigMap
	// "mixed" would go: plaintext never shares a file with ciphertext.
	pushExternalCommit(t, m.repo, m.path+"/refused/configmaps/mixed.yaml",
		"apiVersion: example.com/v1\nkind: Vault\nmetadata:\n  name: mixed\n  namespace: refused\n"+
			"data: ENC[AES256_GCM,data:abc,type:str]\nsops:\n  version: 3.9.0\n")
	apply(t,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "db"}, StringData: map[string]string{"password": "refused-plaintext"}},
		configMap(m.ns, "kustomization", map[string]string{"k": "v"}),
		configMap(m.ns, "mixed", map[string]string{"k": "v"}),
		configMap(m.ns, "visible", map[string]string{"k": "v"}),
	)
	startOperator(t)
	eventually(t, "the writable ConfigMaps in Git", func() bool {
		return gitFile(t, m.repo, m.path+"/refused/configmaps/visible.yaml") != "" &&
			strings.Contains(gitFile(t, m.repo, m.path+"/refused/configmaps/_kustomization.yaml"), "name: kustomization")
	})
	want := []v1alpha3.RefusedObject{ // sorted by reason
		{APIVersion: "v1", Kind: "Secret", Namespace: m.ns, Name: "db", Reason: v1alpha3.ReasonEncryptionRequired},
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: m.ns, Name: "mixed", Reason: v1alpha3.ReasonPlaintextBesideEncrypted},
	}
	eventually(t, "status.refused lists both objects", func() bool {
		gt := getTarget(t, m)
		return gt.Status.Refused != nil && gt.Status.Refused.Count == 2 && slices.Equal(gt.Status.Refused.Objects, want)
	})
	written := targetCondition(t, m.ns, m.target, v1alpha3.ConditionObjectsWritten)
	require.Equal(t, metav1.ConditionFalse, written.Status)
	require.Equal(t, v1alpha3.ReasonObjectsRefused, written.Reason)
	require.Contains(t, written.Message, "2 selected objects are not written")
	require.Contains(t, written.Message, "ConfigMap refused/mixed (PlaintextBesideEncrypted")
	require.Contains(t, written.Message, "Secret refused/db (EncryptionRequired")
	require.Equal(t, metav1.ConditionFalse, conditionStatus(t, m.ns, m.target, v1alpha3.ConditionReady))
	require.Equal(t, metav1.ConditionTrue, conditionStatus(t, m.ns, m.target, v1alpha3.ConditionStalled))
	eventually(t, "the WatchRule says its target is not Ready", func() bool {
		var wr v1alpha3.WatchRule
		if err := env.kube.Client().Get(context.Background(), client.ObjectKey{Namespace: m.ns, Name: "rule"}, &wr); err != nil {
			return false
		}
		c := meta.FindStatusCondition(wr.Status.Conditions, v1alpha3.ConditionGitTargetReady)
		return c != nil && c.Status == metav1.ConditionFalse && strings.Contains(c.Message, "not written")
	})
	eventually(t, "a Warning Event for each refused object", func() bool {
		var events corev1.EventList
		if err := env.kube.Client().List(context.Background(), &events, client.InNamespace(m.ns)); err != nil {
			return false
		}
		seen := map[string]bool{}
		for _, e := range events.Items {
			if e.InvolvedObject.Kind == "GitTarget" && e.InvolvedObject.Name == m.target && e.Type == corev1.EventTypeWarning {
				// The target's Ready transitions are Warning Events too,
				// some with a refusal's reason.
				seen[e.Reason] = seen[e.Reason] || strings.Contains(e.Message, "not writing")
			}
		}
		return seen[v1alpha3.ReasonPlaintextBesideEncrypted] && seen[v1alpha3.ReasonEncryptionRequired]
	})
	require.GreaterOrEqual(t, metricSum(t, "gitopsreverser_placement_refusals_total"), 2.0)

	ctx := context.Background()
	require.NoError(t, env.kube.Client().Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "db"}}))
	require.NoError(t, env.kube.Client().Delete(ctx, configMap(m.ns, "mixed", nil)))
	eventually(t, "nothing refused once the objects are gone", func() bool {
		return getTarget(t, m).Status.Refused == nil &&
			conditionStatus(t, m.ns, m.target, v1alpha3.ConditionObjectsWritten) == metav1.ConditionTrue
	})
	waitReady(t, m.ns, m.target)
}

func getTarget(t *testing.T, m mirrorSetup) *v1alpha3.GitTarget {
	t.Helper()
	var gt v1alpha3.GitTarget
	require.NoError(t, env.kube.Client().Get(context.Background(), client.ObjectKey{Namespace: m.ns, Name: m.target}, &gt))
	return &gt
}

// TestStatusFollowsTheReplayAfterARestart: after a restart the target
// reports Ready once its replay ends, without waiting for a resync (an
// hour here), even when the operator's cache has not seen its own status
// writes by the time the replay ends: a status computed against that stale
// copy must not be lost. The operator reaches the API server through a
// proxy that holds back its GitTarget watch events until the test has seen
// both a status write by this run and the replay's end, so every run meets
// the stale cache (a plain restart met it about one run in two). Any
// write of this run will do (it is InitialReplay when the replay is still
// under way): every later one meets the stale copy.
func TestStatusFollowsTheReplayAfterARestart(t *testing.T) {
	// A control plane of its own: on the suite's, the restarted operator
	// first reconciles every GitTarget earlier tests left, whose forges are
	// gone, and late in the suite that took it past two minutes.
	useOwnControlPlane(t, harness.KubeOptions{})
	m := newMirror(t, "restart-status", "configmaps")
	for _, name := range []string{"a", "b", "c"} {
		apply(t, configMap(m.ns, name, map[string]string{"v": "1"}))
	}
	hourlyResync := func(o *operator.Options) { o.TargetResync = time.Hour }
	stop := startOperatorWith(t, hourlyResync)
	waitReady(t, m.ns, m.target)
	eventually(t, "the three ConfigMaps in Git", func() bool {
		return gitFile(t, m.repo, m.path+"/restart-status/configmaps/c.yaml") != ""
	})
	stop()

	before := getTarget(t, m).ResourceVersion
	lagging := startLaggingAPIServer(t)
	startOperatorWith(t, func(o *operator.Options) {
		hourlyResync(o)
		o.Config = lagging.config()
	})
	eventually(t, "this run wrote the status, unseen by its cache", func() bool {
		return getTarget(t, m).ResourceVersion != before
	})
	eventually(t, "the replay ended", func() bool {
		return seriesExists(t, "gitopsreverser_placements_total", map[string]string{"gittarget_namespace": m.ns, "gittarget": m.target})
	})
	lagging.release()
	eventually(t, "the status follows the replay: Ready", func() bool {
		gt := getTarget(t, m)
		ready := meta.FindStatusCondition(gt.Status.Conditions, v1alpha3.ConditionReady)
		return ready != nil && ready.Status == metav1.ConditionTrue && gt.Status.Streams != nil && gt.Status.Streams.Running == 1
	})
}

// TestADeletedCRDIsReportedAsThatType: deleting the CRD of a mirrored type
// removes its objects from Git and reports that type as no longer served,
// not the whole source as unreachable; the other types keep mirroring.
func TestADeletedCRDIsReportedAsThatType(t *testing.T) {
	m := newMirror(t, "gone-crd", "configmaps")
	crd := namespacedCRD("gone.example.com", "sprocket", "Sprocket")
	applyCRD(t, crd)
	apply(t, &v1alpha3.WatchRule{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "sprockets"},
		Spec: v1alpha3.WatchRuleSpec{TargetRef: v1alpha3.TargetReference{Name: m.target},
			Rules: []v1alpha3.NamespacedResourceRule{{ResourceSelector: v1alpha3.ResourceSelector{
				APIGroups: []string{"gone.example.com"}, Resources: []string{"sprockets"}}}}}})
	createCustom(t, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gone.example.com/v1", "kind": "Sprocket",
		"metadata": map[string]any{"namespace": m.ns, "name": "cog"}, "spec": map[string]any{"teeth": int64(12)},
	}})
	startOperator(t)
	sprocket := m.path + "/gone-crd/gone.example.com/sprockets/cog.yaml"
	eventually(t, "the Sprocket in Git", func() bool { return gitFile(t, m.repo, sprocket) != "" })
	waitReady(t, m.ns, m.target)

	require.NoError(t, env.kube.Client().Delete(context.Background(), crd))
	eventually(t, "the Sprocket's removal in Git", func() bool { return gitFile(t, m.repo, sprocket) == "" })
	eventually(t, "StreamsRunning=False/ResourceNotServed naming the type", func() bool {
		c := targetCondition(t, m.ns, m.target, v1alpha3.ConditionStreamsRunning)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == v1alpha3.ReasonResourceNotServed &&
			strings.Contains(c.Message, "sprockets.gone.example.com")
	})
	require.Equal(t, metav1.ConditionTrue, conditionStatus(t, m.ns, m.target, v1alpha3.ConditionReconciling),
		"it clears by itself once discovery confirms the removal")

	apply(t, configMap(m.ns, "after", map[string]string{"k": "v"}))
	eventually(t, "other types keep mirroring", func() bool {
		return gitFile(t, m.repo, m.path+"/gone-crd/configmaps/after.yaml") != ""
	})
}
