package mirror

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/configbutler/gitops-reverser/internal/attribution"
	"github.com/configbutler/gitops-reverser/internal/branch"
	"github.com/configbutler/gitops-reverser/internal/facts"
	"github.com/configbutler/gitops-reverser/internal/rules"
	"github.com/configbutler/gitops-reverser/internal/sanitize"
	"github.com/configbutler/gitops-reverser/internal/watch"
)

var configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// joinRig is a claim's stream on a real API server whose live changes are
// prepared by the mirror's own glue, with admission the only fact source:
// facts shaped like the observer's reviews go straight into the index.
type joinRig struct {
	ns      string
	client  dynamic.ResourceInterface
	index   *attribution.Index
	stream  facts.StreamKey
	written chan *liveWrite
	tiers   chan attribution.Tier
}

// tierRecorder passes on the tier of every resolution.
type tierRecorder struct {
	attribution.NopObserver
	tiers chan attribution.Tier
}

func (o tierRecorder) Resolved(_ attribution.Query, res attribution.Resolution) { o.tiers <- res.Tier }

func startJoinRig(t *testing.T, ns string) *joinRig {
	t.Helper()
	client, err := dynamic.NewForConfig(kube.Config())
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	_, err = client.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(ctx,
		&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}},
		metav1.CreateOptions{})
	require.NoError(t, err)

	index := &attribution.Index{}
	tiers := make(chan attribution.Tier, 16)
	attr := &Attribution{Route: "prod", Follow: func(facts.StreamKey) {},
		Resolver: &attribution.Resolver{Index: index, AdmissionOnly: true, Observer: tierRecorder{tiers: tiers}}}
	target := &Target{Key: branch.TargetKey{Namespace: "team", Name: "mirror"}, ctx: ctx, sink: &recordingSink{},
		observer: nopObserver{}, attribution: attr}
	claim := rules.Claim{GVR: configMapsGVR, Kind: "ConfigMap", Namespace: ns}
	glue := &streamGlue{target: target, claim: claim}
	r := &joinRig{ns: ns, client: client.Resource(configMapsGVR).Namespace(ns), index: index, stream: attr.stream(claim),
		written: make(chan *liveWrite, 16), tiers: tiers}
	synced := make(chan struct{})
	stream := &watch.Stream{Client: client, Scope: watch.Scope{GVR: configMapsGVR, Namespace: ns}, Log: testr.New(t),
		TrackPrevious: true, Prepare: glue.prepare,
		Handler: func(ctx context.Context, ev watch.Event) error {
			if ev.Kind == watch.Synced {
				close(synced)
			}
			if w, _ := ev.Prepared.(*liveWrite); w != nil {
				if err := glue.emit(ctx, w); err != nil {
					return err
				}
				r.written <- w
			}
			return nil
		}}
	done := make(chan error, 1)
	go func() { done <- stream.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	<-synced
	return r
}

// next is the next live change the stream prepared, and the tier of
// evidence that named its author.
func (r *joinRig) next(t *testing.T) (*liveWrite, attribution.Tier) {
	t.Helper()
	select {
	case w := <-r.written:
		return w, <-r.tiers // resolved before the change was prepared
	case <-time.After(30 * time.Second):
		require.FailNow(t, "no live change within 30s")
		return nil, ""
	}
}

// configMap is team data under key.
func (r *joinRig) configMap(name, value string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": r.ns}, "data": map[string]any{"key": value}}}
}

func (r *joinRig) get(t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	obj, err := r.client.Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return obj
}

// reviewUpdate is the fact the observer files for actor's update of
// current setting key to value: made against current's version, carrying
// the object the API server would store (its dry run), which is what the
// review's object is.
func (r *joinRig) reviewUpdate(t *testing.T, id string, actor string, current *unstructured.Unstructured, value string) facts.Fact {
	t.Helper()
	changed := current.DeepCopy()
	require.NoError(t, unstructured.SetNestedField(changed.Object, value, "data", "key"))
	reviewed, err := r.client.Update(context.Background(), changed, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
	require.NoError(t, err)
	return facts.Fact{AuditID: id, Stream: r.stream, Version: "v1", Verb: "update", Namespace: r.ns, Name: current.GetName(),
		UID: string(current.GetUID()), Actor: facts.Actor{Username: actor}, Stage: time.Now(), Source: facts.SourceAdmission,
		PreviousVersion: current.GetResourceVersion(), Digest: sanitize.Digest(reviewed)}
}

func (r *joinRig) update(t *testing.T, current *unstructured.Unstructured, value string) {
	t.Helper()
	changed := current.DeepCopy()
	require.NoError(t, unstructured.SetNestedField(changed.Object, value, "data", "key"))
	_, err := r.client.Update(context.Background(), changed, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// TestAWatchEventOnARealAPIServerConfirmsTheReviewOfItsWrite: reviews
// filed before their writes, as the observer files them; the watch event
// of each write confirms the review it matches (the digest of the reviewed
// object equals the digest of the watched one), names nobody when two
// matching reviews disagree, and never confirms a review whose write did
// not persist.
func TestAWatchEventOnARealAPIServerConfirmsTheReviewOfItsWrite(t *testing.T) {
	r := startJoinRig(t, "admission-join")
	ctx := context.Background()

	created := r.configMap("web", "v1")
	reviewedCreate, err := r.client.Create(ctx, created, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	require.NoError(t, err)
	r.index.Apply(r.stream, []facts.Fact{{AuditID: "create", Stream: r.stream, Version: "v1", Verb: "create",
		Namespace: r.ns, Name: "web", Actor: facts.Actor{Username: "carol"}, Stage: time.Now(),
		Source: facts.SourceAdmission, Digest: sanitize.Digest(reviewedCreate)}}) // a dry run's uid is not the create's: none
	_, err = r.client.Create(ctx, created, metav1.CreateOptions{})
	require.NoError(t, err)
	w, tier := r.next(t)
	require.Equal(t, attribution.TierAdmission, tier)
	require.Equal(t, "carol", w.author.Name, "the create's review")

	t.Run("the matching review names the author", func(t *testing.T) {
		current := r.get(t, "web")
		r.index.Apply(r.stream, []facts.Fact{r.reviewUpdate(t, "alice-1", "alice", current, "v2")})
		r.update(t, current, "v2")
		w, tier := r.next(t)
		require.Equal(t, attribution.TierAdmission, tier)
		require.Equal(t, "alice", w.author.Name)
		require.Equal(t, branch.AuthorUser, w.author.Kind)
	})

	t.Run("two matching reviews that disagree name nobody", func(t *testing.T) {
		current := r.get(t, "web")
		r.index.Apply(r.stream, []facts.Fact{
			r.reviewUpdate(t, "alice-2", "alice", current, "v3"),
			r.reviewUpdate(t, "bob-2", "bob", current, "v3"),
		})
		r.update(t, current, "v3")
		w, tier := r.next(t)
		require.Equal(t, attribution.TierAmbiguous, tier)
		require.Equal(t, branch.AuthorUnresolved, w.author.Kind)
	})

	t.Run("a review whose write never persisted names nobody", func(t *testing.T) {
		current := r.get(t, "web")
		// alice's write was refused after its review; bob's went through
		// while the observer was down.
		r.index.Apply(r.stream, []facts.Fact{r.reviewUpdate(t, "alice-3", "alice", current, "refused")})
		r.update(t, current, "v4")
		w, tier := r.next(t)
		require.Equal(t, attribution.TierAbsent, tier)
		require.Equal(t, branch.AuthorUnresolved, w.author.Kind)
	})

	t.Run("a delete's review names the deleter", func(t *testing.T) {
		current := r.get(t, "web")
		r.index.Apply(r.stream, []facts.Fact{{AuditID: "delete", Stream: r.stream, Version: "v1", Verb: "delete",
			Namespace: r.ns, Name: "web", UID: string(current.GetUID()), Actor: facts.Actor{Username: "dave"},
			Stage: time.Now(), Source: facts.SourceAdmission}})
		require.NoError(t, r.client.Delete(ctx, "web", metav1.DeleteOptions{}))
		w, tier := r.next(t)
		require.Equal(t, attribution.TierAdmission, tier)
		require.Nil(t, w.write.YAML)
		require.Equal(t, "dave", w.author.Name)
	})
}
