package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/attribution"
	"github.com/configbutler/gitops-reverser/internal/operator"
	"github.com/configbutler/gitops-reverser/test/harness"
)

// unresolvedAuthor is the Git author of a change no fact named.
var unresolvedAuthor = attribution.UnresolvedAuthorName + " <" + attribution.UnresolvedAuthorEmail + ">"

// gitAuthor is the Git author of a user without OIDC claims, or of a
// service account: the username and the email derived from it.
func gitAuthor(username string) string {
	return username + " <" + attribution.DerivedEmail(username) + ">"
}

// head is the commit main points at.
func head(t *testing.T, repo string) string {
	t.Helper()
	out, err := env.git.Git(repo, "rev-parse", "main")
	require.NoError(t, err)
	return out
}

// commitAuthor is the author of one commit.
func commitAuthor(t *testing.T, repo, sha string) string {
	t.Helper()
	return lastAuthor(t, repo, sha)
}

// TestTheDeleterAuthorsTheRemovalThatAnotherAccountsFinalizerCompletes:
// bob deletes an object that holds a finalizer; a controller's service
// account removes the finalizer later, which is when the object goes. The
// commit that removes the file is bob's: the delete is the deleter's.
func TestTheDeleterAuthorsTheRemovalThatAnotherAccountsFinalizerCompletes(t *testing.T) {
	m := newMirror(t, "attr-finalizer", "configmaps")
	startOperatorWith(t, withAttribution(10*time.Second))
	waitReady(t, m.ns, m.target)
	ctx := context.Background()
	alice, bob := actor(t, "alice", nil), actor(t, "bob", nil)
	const controller = "system:serviceaccount:attr-finalizer:cleaner"
	cleaner := actor(t, controller, nil)
	path := m.path + "/attr-finalizer/configmaps/held.yaml"

	held := configMap(m.ns, "held", map[string]string{"v": "1"})
	held.Finalizers = []string{"example.com/cleanup"}
	require.NoError(t, alice.Create(ctx, held))
	eventually(t, "the create in Git", func() bool { return gitFile(t, m.repo, path) != "" })
	require.Equal(t, gitAuthor("alice"), authorOf(t, m, path))

	require.NoError(t, bob.Delete(ctx, configMap(m.ns, "held", nil)))
	eventually(t, "the deletion pending on the finalizer", func() bool {
		var cm corev1.ConfigMap
		return env.kube.Client().Get(ctx, client.ObjectKeyFromObject(held), &cm) == nil && cm.DeletionTimestamp != nil
	})
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": nil}})
	require.NoError(t, cleaner.Patch(ctx, configMap(m.ns, "held", nil), client.RawPatch(types.MergePatchType, patch)))
	eventually(t, "the removal in Git", func() bool { return gitFile(t, m.repo, path) == "" })
	require.Equal(t, gitAuthor("bob"), authorOf(t, m, path), "the removal is the deleter's:\n%s", gitLog(t, m.repo))
}

// TestADeleteCollectionByLabelIsAuthoredByItsRequester: bob deletes the
// labelled ConfigMaps in one deletecollection; every removal is his, and
// the unlabelled one stays.
func TestADeleteCollectionByLabelIsAuthoredByItsRequester(t *testing.T) {
	m := newMirror(t, "attr-collection", "configmaps")
	startOperatorWith(t, withAttribution(10*time.Second))
	waitReady(t, m.ns, m.target)
	ctx := context.Background()
	alice, bob := actor(t, "alice", nil), actor(t, "bob", nil)
	dir := m.path + "/attr-collection/configmaps/"
	batch := []string{"batch-1", "batch-2", "batch-3", "batch-4"}
	for _, name := range append([]string{"kept"}, batch...) {
		cm := configMap(m.ns, name, map[string]string{"v": "1"})
		if name != "kept" {
			cm.Labels = map[string]string{"batch": "nightly"}
		}
		require.NoError(t, alice.Create(ctx, cm))
	}
	eventually(t, "the five ConfigMaps in Git", func() bool {
		for _, name := range append([]string{"kept"}, batch...) {
			if gitFile(t, m.repo, dir+name+".yaml") == "" {
				return false
			}
		}
		return true
	})

	require.NoError(t, bob.DeleteAllOf(ctx, &corev1.ConfigMap{}, client.InNamespace(m.ns), client.MatchingLabels{"batch": "nightly"}))
	eventually(t, "the labelled ConfigMaps gone from Git", func() bool {
		for _, name := range batch {
			if gitFile(t, m.repo, dir+name+".yaml") != "" {
				return false
			}
		}
		return true
	})
	for _, name := range batch {
		require.Equal(t, gitAuthor("bob"), authorOf(t, m, dir+name+".yaml"), "the removal of %s:\n%s", name, gitLog(t, m.repo))
	}
	require.NotEmpty(t, gitFile(t, m.repo, dir+"kept.yaml"))
	require.Equal(t, gitAuthor("alice"), authorOf(t, m, dir+"kept.yaml"))
}

// gadgetCRD is a small namespaced custom type with a schema of its own.
func gadgetCRD() *apiextensionsv1.CustomResourceDefinition {
	spec := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"size": {Type: "integer"}, "color": {Type: "string"}, "tags": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{
			Schema: &apiextensionsv1.JSONSchemaProps{Type: "string"}}},
	}}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gadgets.attr.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "attr.example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Singular: "gadget", Kind: "Gadget", ListKind: "GadgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": spec}}}}},
		},
	}
}

// TestACustomResourcesChangesAreAuthoredByTheirActors: a custom type the
// test installs, watched by a rule naming its group: alice's create and
// bob's update are each theirs.
func TestACustomResourcesChangesAreAuthoredByTheirActors(t *testing.T) {
	applyCRD(t, gadgetCRD())
	m := newMirror(t, "attr-custom")
	apply(t, &v1alpha3.WatchRule{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "gadgets"},
		Spec: v1alpha3.WatchRuleSpec{TargetRef: v1alpha3.TargetReference{Name: m.target},
			Rules: []v1alpha3.NamespacedResourceRule{{ResourceSelector: v1alpha3.ResourceSelector{
				APIGroups: []string{"attr.example.com"}, Resources: []string{"gadgets"}}}}}})
	startOperatorWith(t, withAttribution(10*time.Second))
	waitReady(t, m.ns, m.target)
	ctx := context.Background()
	alice, bob := actor(t, "alice", nil), actor(t, "bob", nil)
	path := m.path + "/attr-custom/attr.example.com/gadgets/sprocket.yaml"

	gadget := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "attr.example.com/v1", "kind": "Gadget",
		"metadata": map[string]any{"namespace": m.ns, "name": "sprocket"},
		"spec":     map[string]any{"size": int64(3), "color": "red", "tags": []any{"a"}},
	}}
	require.Eventually(t, func() bool { return alice.Create(ctx, gadget.DeepCopy()) == nil },
		10*time.Second, 200*time.Millisecond, "creating the Gadget")
	eventually(t, "the create in Git", func() bool { return containsLine(gitFile(t, m.repo, path), "  color: red") })
	require.Equal(t, gitAuthor("alice"), authorOf(t, m, path))

	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"color": "blue", "size": int64(4)}})
	require.NoError(t, bob.Patch(ctx, gadget.DeepCopy(), client.RawPatch(types.MergePatchType, patch)))
	eventually(t, "the update in Git", func() bool { return containsLine(gitFile(t, m.repo, path), "  color: blue") })
	require.Equal(t, gitAuthor("bob"), authorOf(t, m, path))
}

// TestANoOpApplyMakesNoCommit: bob applies alice's content again under her
// field manager (the API server answers with the same version), carol
// applies it under her own (only managedFields change): neither is a
// commit. dave's real change, the sentinel, is the next commit and its
// parent is alice's.
func TestANoOpApplyMakesNoCommit(t *testing.T) {
	m := newMirror(t, "attr-noop-apply", "configmaps")
	startOperatorWith(t, withAttribution(10*time.Second))
	waitReady(t, m.ns, m.target)
	ctx := context.Background()
	path := m.path + "/attr-noop-apply/configmaps/applied.yaml"
	applied := func(v string) *corev1.ConfigMap {
		return &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "applied"}, Data: map[string]string{"v": v}}
	}
	ssa := func(user, manager, v string) string {
		obj := applied(v)
		require.NoError(t, actor(t, user, nil).Patch(ctx, obj, client.Apply, client.FieldOwner(manager), client.ForceOwnership))
		return obj.ResourceVersion
	}

	first := ssa("alice", "kubectl", "1")
	eventually(t, "alice's apply in Git", func() bool { return containsLine(gitFile(t, m.repo, path), `  v: "1"`) })
	aliceCommit := head(t, m.repo)
	require.Equal(t, gitAuthor("alice"), commitAuthor(t, m.repo, aliceCommit))

	require.Equal(t, first, ssa("bob", "kubectl", "1"), "the same apply under the same manager is a no-op")
	require.NotEqual(t, first, ssa("carol", "carol", "1"), "a second manager changes managedFields only")
	ssa("dave", "kubectl", "2")
	eventually(t, "dave's change in Git", func() bool { return containsLine(gitFile(t, m.repo, path), `  v: "2"`) })
	daveCommit := head(t, m.repo)
	require.Equal(t, gitAuthor("dave"), commitAuthor(t, m.repo, daveCommit), "\n%s", gitLog(t, m.repo))
	parent, err := env.git.Git(m.repo, "rev-parse", daveCommit+"^")
	require.NoError(t, err)
	require.Equal(t, aliceCommit, parent, "the no-op applies made a commit:\n%s", gitLog(t, m.repo))
}

// refusingPolicy is a ValidatingAdmissionPolicy (CEL, evaluated in the API
// server) and its binding: in namespace ns, a ConfigMap labelled
// refuse=true is denied on create and update.
func refusingPolicy(ns string) (*admissionv1.ValidatingAdmissionPolicy, *admissionv1.ValidatingAdmissionPolicyBinding) {
	name := ns + "-refuse"
	fail := admissionv1.Fail
	policy := &admissionv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
					Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
				}}}},
			Validations: []admissionv1.Validation{{
				Expression: `!has(object.metadata.labels) || !('refuse' in object.metadata.labels) || object.metadata.labels['refuse'] != 'true'`,
				Message:    "refused by the e2e policy"}},
		}}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
			MatchResources: &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{corev1.LabelMetadataName: ns}}}}}
	return policy, binding
}

// TestAWriteAdmissionRefusesMakesNoCommit: a ValidatingAdmissionPolicy
// (the API server's own CEL admission, a real refusal without a webhook
// server) denies bob's create and update; neither is a commit. carol's
// change, the sentinel, is the next commit after alice's.
func TestAWriteAdmissionRefusesMakesNoCommit(t *testing.T) {
	m := newMirror(t, "attr-refused", "configmaps")
	policy, binding := refusingPolicy(m.ns)
	apply(t, policy, binding)
	t.Cleanup(func() {
		_ = env.kube.Client().Delete(context.Background(), binding)
		_ = env.kube.Client().Delete(context.Background(), policy)
	})
	ctx := context.Background()
	alice, bob, carol := actor(t, "alice", nil), actor(t, "bob", nil), actor(t, "carol", nil)
	refused := func(name string) *corev1.ConfigMap {
		cm := configMap(m.ns, name, map[string]string{"v": "1"})
		cm.Labels = map[string]string{"refuse": "true"}
		return cm
	}
	require.Eventually(t, func() bool {
		return apierrors.IsInvalid(alice.Create(ctx, refused("probe"), client.DryRunAll))
	}, 20*time.Second, 200*time.Millisecond, "the policy in force")

	startOperatorWith(t, withAttribution(10*time.Second))
	waitReady(t, m.ns, m.target)
	dir := m.path + "/attr-refused/configmaps/"
	require.NoError(t, alice.Create(ctx, configMap(m.ns, "allowed", map[string]string{"v": "1"})))
	eventually(t, "alice's create in Git", func() bool { return gitFile(t, m.repo, dir+"allowed.yaml") != "" })
	aliceCommit := head(t, m.repo)

	err := bob.Create(ctx, refused("refused"))
	require.True(t, apierrors.IsInvalid(err), "the create is refused: %v", err)
	var cm corev1.ConfigMap
	require.NoError(t, bob.Get(ctx, client.ObjectKey{Namespace: m.ns, Name: "allowed"}, &cm))
	cm.Labels = map[string]string{"refuse": "true"}
	cm.Data["v"] = "2"
	err = bob.Update(ctx, &cm)
	require.True(t, apierrors.IsInvalid(err), "the update is refused: %v", err)

	require.NoError(t, carol.Create(ctx, configMap(m.ns, "sentinel", map[string]string{"v": "1"})))
	eventually(t, "carol's create in Git", func() bool { return gitFile(t, m.repo, dir+"sentinel.yaml") != "" })
	carolCommit := head(t, m.repo)
	require.Equal(t, gitAuthor("carol"), commitAuthor(t, m.repo, carolCommit))
	parent, err := env.git.Git(m.repo, "rev-parse", carolCommit+"^")
	require.NoError(t, err)
	require.Equal(t, aliceCommit, parent, "a refused write made a commit:\n%s", gitLog(t, m.repo))
	require.Empty(t, gitFile(t, m.repo, dir+"refused.yaml"))
	require.True(t, containsLine(gitFile(t, m.repo, dir+"allowed.yaml"), `  v: "1"`))
}

// mirrorInto is newMirror for a second namespace writing into an existing
// repository, under a path of its own.
func mirrorInto(t *testing.T, ns, repo string) mirrorSetup {
	t.Helper()
	m := mirrorSetup{ns: ns, repo: repo, target: "mirror", path: "clusters/" + ns}
	apply(t,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "git-credentials"},
			StringData: map[string]string{"username": gitUser, "password": gitPassword}},
		gitProvider(ns, "repo", env.git.HTTPURL(repo)),
		&v1alpha3.GitTarget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: m.target},
			Spec: v1alpha3.GitTargetSpec{ProviderRef: v1alpha3.GitProviderReference{Name: "repo"}, Branch: "main", Path: m.path}},
		watchRule(ns, "rule", m.target, "configmaps"),
	)
	return m
}

// TestAnUnresolvedCommitIsNeverRewritten: a change in a namespace the API
// server does not audit is committed unresolved; the attributed changes
// that follow, in an audited namespace of the same repository and to the
// same object, are new commits on top: the unresolved commit and all
// history before it stay as they were.
func TestAnUnresolvedCommitIsNeverRewritten(t *testing.T) {
	audited := newMirror(t, "attr-history", "configmaps")
	quiet := mirrorInto(t, "attr-history-quiet", audited.repo) // not in attributionNamespaces
	startOperatorWith(t, withAttribution(2*time.Second))
	waitReady(t, audited.ns, audited.target)
	waitReady(t, quiet.ns, quiet.target)
	ctx := context.Background()
	alice := actor(t, "alice", nil)
	quietPath := quiet.path + "/attr-history-quiet/configmaps/unseen.yaml"

	require.NoError(t, alice.Create(ctx, configMap(quiet.ns, "unseen", map[string]string{"v": "1"})))
	eventually(t, "the unaudited change in Git", func() bool { return gitFile(t, audited.repo, quietPath) != "" })
	unresolved := head(t, audited.repo)
	require.Equal(t, unresolvedAuthor, commitAuthor(t, audited.repo, unresolved))
	before, err := env.git.Git(audited.repo, "rev-list", "main")
	require.NoError(t, err)

	require.NoError(t, alice.Create(ctx, configMap(audited.ns, "seen", map[string]string{"v": "1"})))
	eventually(t, "the audited change in Git", func() bool {
		return gitFile(t, audited.repo, audited.path+"/attr-history/configmaps/seen.yaml") != ""
	})
	require.Equal(t, gitAuthor("alice"), commitAuthor(t, audited.repo, head(t, audited.repo)))
	patch, _ := json.Marshal(map[string]any{"data": map[string]string{"v": "2"}})
	require.NoError(t, alice.Patch(ctx, configMap(quiet.ns, "unseen", nil), client.RawPatch(types.MergePatchType, patch)))
	eventually(t, "the second unaudited change in Git", func() bool {
		return containsLine(gitFile(t, audited.repo, quietPath), `  v: "2"`)
	})

	after, err := env.git.Git(audited.repo, "rev-list", "main")
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(after, before), "history was rewritten:\nbefore\n%s\nafter\n%s", before, after)
	require.Equal(t, unresolvedAuthor, commitAuthor(t, audited.repo, unresolved))
	require.Equal(t, 2, strings.Count(after, "\n")-strings.Count(before, "\n"), "two new commits:\n%s", gitLog(t, audited.repo))
}

// TestAChangeIsCommittedUnresolvedWhileTheAuditWebhookIsDown: the API
// server audits this namespace but cannot deliver: the attributing
// operator's ingress listens on another port, so every post to the
// configured webhook is refused (the API server retries, then drops the
// batch). Every change still lands, each after the grace, with the
// unresolved author.
func TestAChangeIsCommittedUnresolvedWhileTheAuditWebhookIsDown(t *testing.T) {
	m := newMirror(t, "attr-webhook-down", "configmaps")
	port, err := harness.FreePort()
	require.NoError(t, err)
	startOperatorWith(t, func(o *operator.Options) {
		withAttribution(time.Second)(o)
		o.Attribution.ListenAddr = fmt.Sprintf("127.0.0.1:%d", port)
	})
	waitReady(t, m.ns, m.target)
	ctx := context.Background()
	alice := actor(t, "alice", nil)
	dir := m.path + "/attr-webhook-down/configmaps/"

	for _, name := range []string{"one", "two", "three"} {
		require.NoError(t, alice.Create(ctx, configMap(m.ns, name, map[string]string{"v": "1"})))
	}
	patch, _ := json.Marshal(map[string]any{"data": map[string]string{"v": "2"}})
	require.NoError(t, alice.Patch(ctx, configMap(m.ns, "one", nil), client.RawPatch(types.MergePatchType, patch)))
	require.NoError(t, alice.Delete(ctx, configMap(m.ns, "two", nil)))
	eventually(t, "every change in Git", func() bool {
		return containsLine(gitFile(t, m.repo, dir+"one.yaml"), `  v: "2"`) && gitFile(t, m.repo, dir+"two.yaml") == "" &&
			gitFile(t, m.repo, dir+"three.yaml") != ""
	})
	log, err := env.git.Git(m.repo, "log", "--format=%an <%ae>", "main", "--", dir)
	require.NoError(t, err)
	for _, author := range strings.Split(log, "\n") {
		require.Equal(t, unresolvedAuthor, author, "\n%s", gitLog(t, m.repo))
	}
	require.Zero(t, metricSum(t, "gitopsreverser_audit_events_total"), "no audit event reached the ingress")
}

// TestAFactArrivingAfterItsCommitShippedRewritesNothing: with a grace far
// below the API server's batch delay, alice's change is committed
// unresolved before her fact arrives; once it has arrived (the ingress
// counted it) and a later change is committed, the unresolved commit and
// the history before it are as they were. LimitRanges are this test's
// alone, so the count is of its own facts.
func TestAFactArrivingAfterItsCommitShippedRewritesNothing(t *testing.T) {
	m := newMirror(t, "attr-late-fact", "limitranges")
	startOperatorWith(t, withAttribution(time.Millisecond))
	waitReady(t, m.ns, m.target)
	ctx := context.Background()
	alice := actor(t, "alice", nil)
	path := m.path + "/attr-late-fact/limitranges/limits.yaml"
	limits := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "limits"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer,
			Max: corev1.ResourceList{corev1.ResourceCPU: resourceQuantity(t, "1")}}}}}

	require.NoError(t, alice.Create(ctx, limits))
	eventually(t, "the change in Git", func() bool { return gitFile(t, m.repo, path) != "" })
	shipped := head(t, m.repo)
	require.Equal(t, unresolvedAuthor, commitAuthor(t, m.repo, shipped), "committed before the fact came")
	before, err := env.git.Git(m.repo, "rev-list", "main")
	require.NoError(t, err)
	eventually(t, "alice's fact at the ingress", func() bool {
		return metricSumWhere(t, "gitopsreverser_audit_events_total", map[string]string{"outcome": "queued", "resource": "limitranges"}) >= 1
	})

	limits.Spec.Limits[0].Max[corev1.ResourceCPU] = resourceQuantity(t, "2")
	require.NoError(t, alice.Update(ctx, limits))
	eventually(t, "the later change in Git", func() bool { return strings.Contains(gitFile(t, m.repo, path), `cpu: "2"`) })
	after, err := env.git.Git(m.repo, "rev-list", "main")
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(after, before), "history was rewritten:\nbefore\n%s\nafter\n%s", before, after)
	require.Equal(t, unresolvedAuthor, commitAuthor(t, m.repo, shipped))
}

func resourceQuantity(t *testing.T, s string) resource.Quantity {
	t.Helper()
	q, err := resource.ParseQuantity(s)
	require.NoError(t, err)
	return q
}
