package e2e

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/configbutler/gitops-reverser/internal/admission/observer"
	"github.com/configbutler/gitops-reverser/internal/facts"
	factsredis "github.com/configbutler/gitops-reverser/internal/facts/redis"
	"github.com/configbutler/gitops-reverser/internal/operator"
	"github.com/configbutler/gitops-reverser/internal/redisconn"
	"github.com/configbutler/gitops-reverser/internal/sanitize"
	"github.com/configbutler/gitops-reverser/test/harness"
)

// observed collects the facts of one stream as the operator publishes
// them, read back from Redis as every replica's follower reads them.
type observed struct {
	mu    sync.Mutex
	facts []facts.Fact
}

// followFacts follows stream in the Redis the operator publishes to.
func followFacts(t *testing.T, r *harness.Redis, stream facts.StreamKey) *observed {
	t.Helper()
	conn := redisconn.Options{Addr: r.Addr()}
	clientOpts, err := conn.ClientOptions()
	require.NoError(t, err)
	tr := factsredis.New(clientOpts, factsredis.Options{Prefix: conn.Prefix()})
	ctx, cancel := context.WithCancel(context.Background())
	o := &observed{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = tr.Follow(ctx, stream, time.Time{}, func(fs []facts.Fact) {
			o.mu.Lock()
			o.facts = append(o.facts, fs...)
			o.mu.Unlock()
		}, func(int) {})
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		_ = tr.Close()
	})
	return o
}

// waitFor waits for the facts about name and returns every fact published
// up to and including the last of them once want of them have arrived.
func (o *observed) waitFor(t *testing.T, name string, want int) (about, upTo []facts.Fact) {
	t.Helper()
	eventually(t, fmt.Sprintf("%d facts about %s", want, name), func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		about, upTo = nil, nil
		for i, f := range o.facts {
			if f.Name == name {
				about = append(about, f)
				upTo = o.facts[:i+1]
			}
		}
		upTo = slices.Clone(upTo)
		return len(about) >= want
	})
	require.Len(t, about, want, "facts about %s", name)
	return about, upTo
}

// observerOperator runs the operator against a control plane of the
// test's own, whose API server has no audit webhook: attribution from the
// admission observer alone, its facts in Redis. It returns the mirror (of
// ConfigMaps and Deployments) and the stop of the operator.
func observerOperator(t *testing.T, ns string) (mirrorSetup, *harness.Redis, string, func()) {
	t.Helper()
	m, redis, observerConfig, stop, _ := observerOperatorTuned(t, ns)
	return m, redis, observerConfig, stop
}

// observerOperatorTuned is observerOperator that also returns the options
// it started the operator with, for a test that starts it again.
func observerOperatorTuned(t *testing.T, ns string) (mirrorSetup, *harness.Redis, string, func(), func(*operator.Options)) {
	t.Helper()
	useOwnControlPlane(t, harness.KubeOptions{})
	redis, _ := startRedis(t)
	m := newMirror(t, ns, "configmaps", "deployments")
	webhook, serveWebhook := admissionWebhook(t, ns)
	observerConfig := "gitops-reverser-observer-" + ns
	t.Cleanup(func() {
		_ = env.kube.Client().Delete(context.Background(), &admissionregistrationv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: observerConfig}})
	})
	tune := func(o *operator.Options) {
		// Both webhooks are served on the port of the operator's own, with
		// its certificate.
		serveWebhook(o)
		url := fmt.Sprintf("https://127.0.0.1:%d", o.Admission.Port)
		o.Redis = &redisconn.Options{Addr: redis.Addr()}
		o.Attribution = &operator.AttributionOptions{Source: operator.SourceAdmission, Replicas: 1, Grace: 3 * time.Second,
			Observer: &operator.ObserverOptions{WebhookConfiguration: observerConfig, URL: url}}
	}
	stop := startOperatorWith(t, tune)
	waitReady(t, m.ns, m.target)
	waitInjected(t, webhook)
	waitObserverRegistered(t, observerConfig)
	return m, redis, observerConfig, stop, tune
}

// waitObserverRegistered waits for the observer's configuration to name
// the mirrored types with the operator's caBundle.
func waitObserverRegistered(t *testing.T, name string) {
	t.Helper()
	waitObserverResources(t, name, "configmaps", "deployments", "deployments/scale")
}

// waitObserverResources waits for the observer's configuration to name
// exactly resources (sorted), each webhook with a caBundle.
func waitObserverResources(t *testing.T, name string, resources ...string) {
	t.Helper()
	eventually(t, fmt.Sprintf("the admission observer registered for %v", resources), func() bool {
		var vwc admissionregistrationv1.ValidatingWebhookConfiguration
		if err := env.kube.Client().Get(context.Background(), client.ObjectKey{Name: name}, &vwc); err != nil {
			return false
		}
		var registered []string
		for _, w := range vwc.Webhooks {
			if len(w.ClientConfig.CABundle) == 0 {
				return false
			}
			for _, r := range w.Rules {
				registered = append(registered, r.Resources...)
			}
		}
		slices.Sort(registered)
		return slices.Equal(registered, resources)
	})
}

// storedDigest is sanitize.Digest of the object as the API server stores
// it: what the watch shows.
func storedDigest(t *testing.T, apiVersion, kind, ns, name string) string {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	require.NoError(t, env.kube.Client().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u))
	return sanitize.Digest(u)
}

// TestTheAdmissionObserverTurnsEachReviewIntoAFact pins down, on a real
// API server without an audit webhook, what the observer is sent and
// what it makes of it: a create names the final uid and what will be
// stored; a PUT and a /scale arrive as UPDATE with the version they were
// made against; a dry run yields nothing; a deletecollection is one DELETE
// per object; the OIDC claims of user.extra name the person.
func TestTheAdmissionObserverTurnsEachReviewIntoAFact(t *testing.T) {
	ns := "observed"
	m, redis, observerConfig, _ := observerOperator(t, ns)
	configMaps := followFacts(t, redis, facts.StreamKey{Route: "default", Resource: "configmaps"})
	deployments := followFacts(t, redis, facts.StreamKey{Route: "default", Group: "apps", Resource: "deployments"})
	ctx := context.Background()
	alice := actor(t, "alice", map[string][]string{facts.ExtraDisplayName: {"Alice Example"}, facts.ExtraEmail: {"alice@example.com"}})

	t.Run("create", func(t *testing.T) {
		cm := configMap(m.ns, "created", map[string]string{"v": "1"})
		require.NoError(t, alice.Create(ctx, cm))
		got, _ := configMaps.waitFor(t, "created", 1)
		f := got[0]
		require.Equal(t, facts.SourceAdmission, f.Source)
		require.Equal(t, "create", f.Verb)
		require.Equal(t, string(cm.UID), f.UID, "a create's review carries the final uid")
		require.Empty(t, f.ResourceVersion)
		require.Empty(t, f.PreviousVersion)
		require.Equal(t, storedDigest(t, "v1", "ConfigMap", m.ns, "created"), f.Digest, "the reviewed object is what is stored")
		require.Equal(t, facts.Actor{Username: "alice", Groups: []string{"system:masters", "system:authenticated"},
			DisplayName: "Alice Example", Email: "alice@example.com"}, f.Actor)
	})

	t.Run("generateName", func(t *testing.T) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, GenerateName: "generated-"}}
		require.NoError(t, alice.Create(ctx, cm))
		got, _ := configMaps.waitFor(t, cm.Name, 1)
		require.Equal(t, string(cm.UID), got[0].UID, "the review carries the generated name and the final uid")
	})

	t.Run("update by PUT", func(t *testing.T) {
		cm := configMap(m.ns, "updated", map[string]string{"v": "1"})
		require.NoError(t, alice.Create(ctx, cm))
		before := cm.ResourceVersion
		cm.Data["v"] = "2"
		require.NoError(t, alice.Update(ctx, cm))
		got, _ := configMaps.waitFor(t, "updated", 2)
		f := got[1]
		require.Equal(t, "update", f.Verb)
		require.Equal(t, before, f.PreviousVersion, "an UPDATE's oldObject is at the version it was made against")
		require.Equal(t, storedDigest(t, "v1", "ConfigMap", m.ns, "updated"), f.Digest)
	})

	t.Run("merge patch and server-side apply", func(t *testing.T) {
		applied := func(value string) *unstructured.Unstructured {
			u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"namespace": m.ns, "name": "applied"}, "data": map[string]any{"v": value}}}
			require.NoError(t, alice.Patch(ctx, u, client.Apply, client.FieldOwner("e2e"), client.ForceOwnership))
			return u
		}
		first := applied("1")
		got, _ := configMaps.waitFor(t, "applied", 1)
		require.Equal(t, "create", got[0].Verb, "an apply that creates is reviewed as a CREATE")
		require.Equal(t, string(first.GetUID()), got[0].UID)
		require.Equal(t, storedDigest(t, "v1", "ConfigMap", m.ns, "applied"), got[0].Digest)

		second := applied("2")
		got, _ = configMaps.waitFor(t, "applied", 2)
		require.Equal(t, "update", got[1].Verb, "an apply that changes is reviewed as an UPDATE")
		require.Equal(t, first.GetResourceVersion(), got[1].PreviousVersion)
		require.Equal(t, storedDigest(t, "v1", "ConfigMap", m.ns, "applied"), got[1].Digest)

		patch := client.RawPatch(types.MergePatchType, []byte(`{"data":{"v":"3"}}`))
		require.NoError(t, alice.Patch(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "applied"}}, patch))
		got, _ = configMaps.waitFor(t, "applied", 3)
		require.Equal(t, "update", got[2].Verb, "a merge patch is reviewed as an UPDATE")
		require.Equal(t, second.GetResourceVersion(), got[2].PreviousVersion)
		require.Equal(t, storedDigest(t, "v1", "ConfigMap", m.ns, "applied"), got[2].Digest)
	})

	t.Run("a dry run yields no fact", func(t *testing.T) {
		require.NoError(t, alice.Create(ctx, configMap(m.ns, "dry", map[string]string{"v": "1"}), client.DryRunAll))
		// The reviews are sequential: a fact of the dry run would be
		// published before the sentinel's.
		require.NoError(t, alice.Create(ctx, configMap(m.ns, "after-dry", nil)))
		_, upTo := configMaps.waitFor(t, "after-dry", 1)
		for _, f := range upTo {
			require.NotEqual(t, "dry", f.Name, "a dry run was published")
		}
	})

	t.Run("deletecollection is one DELETE per object", func(t *testing.T) {
		uids := map[string]string{}
		for _, name := range []string{"swept-1", "swept-2", "swept-3"} {
			cm := configMap(m.ns, name, nil)
			cm.Labels = map[string]string{"sweep": "yes"}
			require.NoError(t, alice.Create(ctx, cm))
			uids[name] = string(cm.UID)
		}
		require.NoError(t, alice.DeleteAllOf(ctx, &corev1.ConfigMap{}, client.InNamespace(m.ns), client.MatchingLabels{"sweep": "yes"}))
		for name, uid := range uids {
			got, _ := configMaps.waitFor(t, name, 2)
			require.Equal(t, "delete", got[1].Verb)
			require.Equal(t, uid, got[1].UID)
			require.Empty(t, got[1].Digest)
			require.Equal(t, "alice", got[1].Actor.Username)
		}
	})

	t.Run("a delete held by a finalizer", func(t *testing.T) {
		cm := configMap(m.ns, "finalized", nil)
		cm.Finalizers = []string{"example.com/hold"}
		require.NoError(t, alice.Create(ctx, cm))
		require.NoError(t, alice.Delete(ctx, cm))
		controller := actor(t, "system:serviceaccount:"+m.ns+":controller", nil)
		require.NoError(t, controller.Patch(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "finalized"}},
			client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))))
		require.NoError(t, alice.Create(ctx, configMap(m.ns, "after-finalized", nil)))
		_, upTo := configMaps.waitFor(t, "after-finalized", 1)
		var about []facts.Fact
		for _, f := range upTo {
			if f.Name == "finalized" {
				about = append(about, f)
			}
		}
		require.Len(t, about, 3, "create, delete, finalizer removal; the final removal is not reviewed")
		require.Equal(t, []string{"create", "delete", "update"}, []string{about[0].Verb, about[1].Verb, about[2].Verb})
		require.Equal(t, "alice", about[1].Actor.Username, "the delete names the deleter")
		require.Equal(t, "system:serviceaccount:"+m.ns+":controller", about[2].Actor.Username)
		require.Equal(t, string(cm.UID), about[2].UID)
	})

	t.Run("scale arrives as an UPDATE of the parent", func(t *testing.T) {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "web"}, Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}}}}}
		require.NoError(t, alice.Create(ctx, d))
		created, _ := deployments.waitFor(t, "web", 1)
		require.Equal(t, storedDigest(t, "apps/v1", "Deployment", m.ns, "web"), created[0].Digest,
			"the create's digest is of the Deployment as stored, defaults and all")
		before := d.ResourceVersion
		scaleThroughSubresource(t, m.ns, "web", 3)
		got, _ := deployments.waitFor(t, "web", 2)
		f := got[1]
		require.Equal(t, "update", f.Verb)
		require.Equal(t, "scale", f.Subresource)
		require.Equal(t, string(d.UID), f.UID, "a Scale carries its parent's uid")
		require.Equal(t, before, f.PreviousVersion)
		require.Empty(t, f.Digest, "a Scale is not what the mirror writes")
	})

	t.Run("the registration follows the rules", func(t *testing.T) {
		rule := watchRule(m.ns, "more", m.target, "services")
		apply(t, rule)
		waitObserverResources(t, observerConfig, "configmaps", "deployments", "deployments/scale", "services")
		require.NoError(t, env.kube.Client().Delete(ctx, rule))
		waitObserverResources(t, observerConfig, "configmaps", "deployments", "deployments/scale")
	})
}

// TestWritesSucceedWhileTheObserverIsDown: with the operator stopped the
// observer's registration stays, and failurePolicy Ignore lets every write
// through without a review.
func TestWritesSucceedWhileTheObserverIsDown(t *testing.T) {
	ns := "observer-down"
	m, _, observerConfig, stop := observerOperator(t, ns)
	stop()
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	require.NoError(t, env.kube.Client().Get(context.Background(), client.ObjectKey{Name: observerConfig}, &vwc))
	require.NotEmpty(t, vwc.Webhooks, "the registration outlives the operator")
	require.Equal(t, admissionregistrationv1.Ignore, *vwc.Webhooks[0].FailurePolicy)
	require.Equal(t, observer.DefaultTimeoutSeconds, *vwc.Webhooks[0].TimeoutSeconds)
	cm := configMap(m.ns, "unobserved", map[string]string{"v": "1"})
	require.NoError(t, env.kube.Client().Create(context.Background(), cm))
	cm.Data["v"] = "2"
	require.NoError(t, env.kube.Client().Update(context.Background(), cm))
	require.NoError(t, env.kube.Client().Delete(context.Background(), cm))
}
