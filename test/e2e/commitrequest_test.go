package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/admission"
	"github.com/configbutler/gitops-reverser/internal/operator"
	"github.com/configbutler/gitops-reverser/test/harness"
)

// admissionWebhook registers a ValidatingWebhookConfiguration for
// CommitRequest creates in ns, pointing the real API server at the
// operator's /validate-operator-types on a free port, and returns the tune
// that makes the operator serve it there with a certificate of its own CA,
// which it injects into the configuration.
func admissionWebhook(t *testing.T, ns string) (name string, tune func(*operator.Options)) {
	t.Helper()
	port, err := harness.FreePort()
	require.NoError(t, err)
	name = "gitops-reverser-" + ns
	ignore, none := admissionregistrationv1.Ignore, admissionregistrationv1.SideEffectClassNone
	url := fmt.Sprintf("https://127.0.0.1:%d%s", port, admission.Path)
	timeout := int32(5)
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "commitrequests.configbutler.ai",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url},
			FailurePolicy:           &ignore,
			SideEffects:             &none,
			TimeoutSeconds:          &timeout,
			AdmissionReviewVersions: []string{"v1"},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
			Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{v1alpha3.GroupVersion.Group}, APIVersions: []string{"*"},
					Resources: []string{"commitrequests"}}}},
		}}}
	apply(t, vwc)
	t.Cleanup(func() { _ = env.kube.Client().Delete(context.Background(), vwc) })
	return name, func(o *operator.Options) {
		o.Admission = &operator.AdmissionOptions{Host: "127.0.0.1", Port: port, ServiceHost: "127.0.0.1", WebhookConfiguration: name}
	}
}

// waitInjected waits for the operator to put its CA into the webhook
// configuration: from then on the API server calls it.
func waitInjected(t *testing.T, name string) {
	t.Helper()
	eventually(t, "the webhook's caBundle injected", func() bool {
		var vwc admissionregistrationv1.ValidatingWebhookConfiguration
		if err := env.kube.Client().Get(context.Background(), client.ObjectKey{Name: name}, &vwc); err != nil {
			return false
		}
		return len(vwc.Webhooks) == 1 && len(vwc.Webhooks[0].ClientConfig.CABundle) > 0
	})
}

func both(tunes ...func(*operator.Options)) func(*operator.Options) {
	return func(o *operator.Options) {
		for _, tune := range tunes {
			tune(o)
		}
	}
}

// commitRequestMirror is a mirror of ConfigMaps whose commit window is
// window, with an attributing operator serving the admission webhook.
func commitRequestMirror(t *testing.T, ns string, window time.Duration) mirrorSetup {
	t.Helper()
	m := newMirror(t, ns, "configmaps")
	provider := v1alpha3.GitProvider{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "repo"}}
	edit(t, &provider, func() { provider.Spec.Push.CommitWindow = &metav1.Duration{Duration: window} })
	apply(t, configMap(m.ns, "seed", map[string]string{"v": "0"}))
	webhook, tune := admissionWebhook(t, ns)
	startOperatorWith(t, both(withAttribution(10*time.Second), tune))
	waitReady(t, m.ns, m.target)
	waitInjected(t, webhook)
	// The replay's commit: the branch exists before the test's changes.
	eventually(t, "the replay in Git", func() bool { return gitFile(t, m.repo, m.path+"/"+ns+"/configmaps/seed.yaml") != "" })
	return m
}

func commitRequest(ns, name, message string, delay int32) *v1alpha3.CommitRequest {
	return &v1alpha3.CommitRequest{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha3.CommitRequestSpec{TargetRef: v1alpha3.TargetReference{Name: "mirror"}, Message: message, CloseDelaySeconds: &delay}}
}

// finishedRequest waits until the CommitRequest has its outcome and
// returns it.
func finishedRequest(t *testing.T, ns, name string) v1alpha3.CommitRequest {
	t.Helper()
	var cr v1alpha3.CommitRequest
	eventually(t, "CommitRequest "+name+" finished", func() bool {
		if err := env.kube.Client().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &cr); err != nil {
			return false
		}
		r := meta.FindStatusCondition(cr.Status.Conditions, v1alpha3.ConditionReconciling)
		return meta.FindStatusCondition(cr.Status.Conditions, v1alpha3.ConditionPushed) != nil && r != nil && r.Status == metav1.ConditionFalse
	})
	return cr
}

func requireCondition(t *testing.T, cr v1alpha3.CommitRequest, typ string, status metav1.ConditionStatus, reason string) {
	t.Helper()
	c := meta.FindStatusCondition(cr.Status.Conditions, typ)
	require.NotNil(t, c, typ)
	require.Equal(t, status, c.Status, "%s: %s", typ, c.Message)
	require.Equal(t, reason, c.Reason, "%s: %s", typ, c.Message)
}

func lastMessage(t *testing.T, repo string) string {
	t.Helper()
	out, err := env.git.Git(repo, "log", "-1", "--format=%B", "main")
	require.NoError(t, err)
	return strings.TrimSpace(out)
}

// TestACommitRequestCommitsItsSubmittersWindowWithItsMessage: Alice
// changes a ConfigMap and asks for a commit: one commit, her message, her
// name, and the SHA on the CommitRequest is the remote's.
func TestACommitRequestCommitsItsSubmittersWindowWithItsMessage(t *testing.T) {
	m := commitRequestMirror(t, "cr-alice", time.Minute)
	ctx := context.Background()
	alice := actor(t, "alice", map[string][]string{
		"configbutler.ai/claims/display-name": {"Alice Liddell"}, "configbutler.ai/claims/email": {"alice@example.com"}})
	before := commitCount(t, m.repo)

	require.NoError(t, alice.Create(ctx, configMap(m.ns, "limits", map[string]string{"cpu": "2"})))
	require.NoError(t, alice.Create(ctx, commitRequest(m.ns, "release", "Release 1.2: tune limits", 3)))

	cr := finishedRequest(t, m.ns, "release")
	requireCondition(t, cr, v1alpha3.ConditionReady, metav1.ConditionTrue, v1alpha3.ReasonCommitted)
	requireCondition(t, cr, v1alpha3.ConditionPushed, metav1.ConditionTrue, v1alpha3.ReasonCommitted)
	requireCondition(t, cr, v1alpha3.ConditionAuthorAttributed, metav1.ConditionTrue, v1alpha3.ReasonAdmissionRecordFound)
	require.Equal(t, "main", cr.Status.Branch)
	require.Equal(t, head(t, m.repo), cr.Status.SHA, "the SHA is the remote's")
	require.Equal(t, before+1, commitCount(t, m.repo), gitLog(t, m.repo))
	require.Equal(t, "Release 1.2: tune limits", lastMessage(t, m.repo))
	require.Equal(t, "Alice Liddell <alice@example.com>", lastAuthor(t, m.repo, "main"))
	require.Contains(t, gitFile(t, m.repo, m.path+"/cr-alice/configmaps/limits.yaml"), "cpu")
}

// TestACommitRequestNeverClosesAnotherAuthorsWindow: Bob's request meets
// Alice's open window: a correct no-commit, and her window closes later by
// itself with the rendered message.
func TestACommitRequestNeverClosesAnotherAuthorsWindow(t *testing.T) {
	m := commitRequestMirror(t, "cr-mismatch", 8*time.Second)
	ctx := context.Background()
	alice, bob := actor(t, "alice", nil), actor(t, "bob", nil)
	replayed := head(t, m.repo)

	require.NoError(t, alice.Create(ctx, configMap(m.ns, "hers", map[string]string{"v": "1"})))
	require.NoError(t, bob.Create(ctx, commitRequest(m.ns, "bobs", "Bob's save", 3)))
	cr := finishedRequest(t, m.ns, "bobs")
	requireCondition(t, cr, v1alpha3.ConditionReady, metav1.ConditionTrue, v1alpha3.ReasonWindowMismatch)
	requireCondition(t, cr, v1alpha3.ConditionPushed, metav1.ConditionFalse, v1alpha3.ReasonWindowMismatch)
	require.Equal(t, replayed, head(t, m.repo), "Alice's window is untouched")

	eventually(t, "Alice's window committed by itself", func() bool { return head(t, m.repo) != replayed })
	require.NotEqual(t, "Bob's save", lastMessage(t, m.repo))
	require.Equal(t, "alice <alice@noreply.cluster.local>", lastAuthor(t, m.repo, "main"))

	require.NoError(t, bob.Create(ctx, commitRequest(m.ns, "nothing-open", "", 0)))
	cr = finishedRequest(t, m.ns, "nothing-open")
	requireCondition(t, cr, v1alpha3.ConditionReady, metav1.ConditionTrue, v1alpha3.ReasonNoWindowInGrace)
	requireCondition(t, cr, v1alpha3.ConditionPushed, metav1.ConditionFalse, v1alpha3.ReasonNoWindowInGrace)
}

// TestTheCloseDelayLetsALaterChangeJoin: a change made after the request
// was attached, within its closeDelaySeconds, is in the requested commit.
func TestTheCloseDelayLetsALaterChangeJoin(t *testing.T) {
	m := commitRequestMirror(t, "cr-delay", time.Minute)
	ctx := context.Background()
	alice := actor(t, "alice", nil)
	require.NoError(t, alice.Create(ctx, commitRequest(m.ns, "soon", "with the later change", 6)))
	// The change is made once the request is with its worker, waiting out
	// its delay with no window of hers open yet.
	eventually(t, "the request attached", func() bool {
		var cr v1alpha3.CommitRequest
		if err := env.kube.Client().Get(ctx, client.ObjectKey{Namespace: m.ns, Name: "soon"}, &cr); err != nil {
			return false
		}
		c := meta.FindStatusCondition(cr.Status.Conditions, v1alpha3.ConditionReconciling)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == v1alpha3.ReasonFinalizing
	})
	require.NoError(t, alice.Create(ctx, configMap(m.ns, "later", map[string]string{"v": "1"})))

	cr := finishedRequest(t, m.ns, "soon")
	requireCondition(t, cr, v1alpha3.ConditionReady, metav1.ConditionTrue, v1alpha3.ReasonCommitted)
	require.Equal(t, "with the later change", lastMessage(t, m.repo))
	require.NotEmpty(t, gitFile(t, m.repo, m.path+"/cr-delay/configmaps/later.yaml"))
}

// TestARequestedCommitReplayedOverAMovedRemoteReportsTheReplayedSHA: a
// human commit lands while Alice's window is open; the requested commit is
// replayed on top of it and its SHA is the one on the remote.
func TestARequestedCommitReplayedOverAMovedRemoteReportsTheReplayedSHA(t *testing.T) {
	m := commitRequestMirror(t, "cr-conflict", time.Minute)
	ctx := context.Background()
	alice := actor(t, "alice", nil)
	require.NoError(t, alice.Create(ctx, configMap(m.ns, "mine", map[string]string{"v": "1"})))
	pushExternalCommit(t, m.repo, "notes/human.md", "a human was here\n")
	external := head(t, m.repo)
	require.NoError(t, alice.Create(ctx, commitRequest(m.ns, "after-human", "mine, after the human", 3)))

	cr := finishedRequest(t, m.ns, "after-human")
	requireCondition(t, cr, v1alpha3.ConditionReady, metav1.ConditionTrue, v1alpha3.ReasonCommitted)
	require.Equal(t, head(t, m.repo), cr.Status.SHA)
	parent, err := env.git.Git(m.repo, "rev-parse", cr.Status.SHA+"^")
	require.NoError(t, err)
	require.Equal(t, external, strings.TrimSpace(parent), "replayed on the human's commit")
	require.Equal(t, "a human was here\n", gitFile(t, m.repo, "notes/human.md"))
}

// TestARequestWithoutAnAdmissionRecordStillCommits: the webhook is not
// served (the API server's call fails, failurePolicy Ignore lets the
// create through): AuthorAttributed=False, and in configured-author mode
// the request still closes the window. Once its retention passed it is
// deleted.
func TestARequestWithoutAnAdmissionRecordStillCommits(t *testing.T) {
	m := newMirror(t, "cr-unreachable", "configmaps")
	provider := v1alpha3.GitProvider{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "repo"}}
	edit(t, &provider, func() { provider.Spec.Push.CommitWindow = &metav1.Duration{Duration: time.Minute} })
	admissionWebhook(t, m.ns) // registered, never served
	startOperatorWith(t, func(o *operator.Options) { o.CommitRequestRetention = 3 * time.Second })
	waitReady(t, m.ns, m.target)
	ctx := context.Background()
	apply(t, configMap(m.ns, "plain", map[string]string{"v": "1"}))
	require.NoError(t, env.kube.Client().Create(ctx, commitRequest(m.ns, "anyway", "saved without a submitter", 3)))

	cr := finishedRequest(t, m.ns, "anyway")
	requireCondition(t, cr, v1alpha3.ConditionAuthorAttributed, metav1.ConditionFalse, v1alpha3.ReasonAdmissionRecordMissing)
	requireCondition(t, cr, v1alpha3.ConditionReady, metav1.ConditionTrue, v1alpha3.ReasonCommitted)
	require.Equal(t, "saved without a submitter", lastMessage(t, m.repo))
	require.Equal(t, head(t, m.repo), cr.Status.SHA)

	eventually(t, "the finished request deleted after its retention", func() bool {
		err := env.kube.Client().Get(ctx, client.ObjectKeyFromObject(&cr), &v1alpha3.CommitRequest{})
		return apierrors.IsNotFound(err)
	})
}

// TestARequestNamingAMissingGitTargetStopsAtOnce: a CommitRequest whose
// GitTarget does not exist cannot close a window; it says so at once
// (Stalled, GitTargetNotFound) and the operator logs it, instead of
// waiting as Finalizing first.
func TestARequestNamingAMissingGitTargetStopsAtOnce(t *testing.T) {
	m := newMirror(t, "cr-missing-target", "configmaps")
	startOperator(t)
	waitReady(t, m.ns, m.target)
	request := commitRequest(m.ns, "nowhere", "saved into nothing", 0)
	request.Spec.TargetRef.Name = "absent"
	require.NoError(t, env.kube.Client().Create(context.Background(), request))

	cr := finishedRequest(t, m.ns, "nowhere")
	requireCondition(t, cr, v1alpha3.ConditionReady, metav1.ConditionFalse, v1alpha3.ReasonGitTargetNotFound)
	requireCondition(t, cr, v1alpha3.ConditionStalled, metav1.ConditionTrue, v1alpha3.ReasonGitTargetNotFound)
	require.Contains(t, meta.FindStatusCondition(cr.Status.Conditions, v1alpha3.ConditionReady).Message, "GitTarget absent does not exist")
	eventually(t, "the operator logs it", func() bool {
		log := operatorLog.String()
		return strings.Contains(log, "CommitRequest names a missing GitTarget") && strings.Contains(log, m.ns+"/absent")
	})
}
