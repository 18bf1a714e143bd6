package mirror

import (
	"context"
	"fmt"
	"slices"

	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	apiwatch "k8s.io/apimachinery/pkg/watch"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/branch"
	"github.com/configbutler/gitops-reverser/internal/discovery"
	"github.com/configbutler/gitops-reverser/internal/manifest"
	"github.com/configbutler/gitops-reverser/internal/rules"
	"github.com/configbutler/gitops-reverser/internal/sanitize"
	"github.com/configbutler/gitops-reverser/internal/watch"
)

// Sink is the branch worker as a target sees it.
type Sink interface {
	Write(ctx context.Context, target branch.TargetKey, author branch.Author, w branch.Write) error
	Sync(ctx context.Context, target branch.TargetKey, sweep *branch.Sweep, closeWindow bool) error
	// WhenSettled calls fn once the target's earlier writes are in Git,
	// with the branch head that holds them ("" when unknown).
	WhenSettled(ctx context.Context, target branch.TargetKey, fn func(head string)) error
	// HoldsCommit reports whether the branch, as the forge has it now,
	// still holds commit in its history ("" for no branch yet).
	HoldsCommit(ctx context.Context, commit string) (bool, error)
}

// streamGlue handles one claim's stream: it decides what of each event
// reaches Git, and collects a replay's present set for the sweep.
type streamGlue struct {
	target *Target
	claim  rules.Claim
	// present are the names of the objects this replay forwarded (the
	// scope names the rest: branch.Sweep.Names); controller-owned and
	// refused objects are left out, so a sweep removes them from Git.
	present []string
	// emitted is what the stream last wrote of each object.
	emitted emittedContent
}

// seenCtx is the context a live change the stream has seen is prepared
// and handed on under: the target's, not the stream's. It reaches the
// worker even when the stream stops meanwhile (its WatchRule deleted in
// the same command, while the change waited for its author): a stop ends
// what the stream sees next, not what it saw. The target's context still
// ends the wait at shutdown.
func (g *streamGlue) seenCtx(ctx context.Context, ev watch.Event) context.Context {
	if ev.Kind == watch.Delete || ev.Kind == watch.Upsert && !ev.Replay {
		return g.target.ctx
	}
	return ctx
}

func (g *streamGlue) handle(ctx context.Context, ev watch.Event) error {
	ctx = g.seenCtx(ctx, ev)
	switch ev.Kind {
	case watch.ReplayStart:
		g.present = nil
		g.emitted.reset()
		g.target.markStream(g.claim, func(r *running) { r.synced, r.catchingUp = false, false })
	case watch.Upsert:
		if ev.Replay {
			return g.replayed(ctx, ev)
		}
		return g.emit(ctx, ev.Prepared)
	case watch.Delete:
		return g.emit(ctx, ev.Prepared)
	case watch.Synced:
		return g.synced(ctx, ev.Present)
	case watch.Resumed:
		g.resumed()
	case watch.CaughtUp:
		return g.caughtUp(ctx)
	}
	return nil
}

// resumed counts a stream that started from its cursor as replayed: Git
// holds its scope up to the cursor, so there is nothing to sweep. Its
// catch-up is still to come: the target's held window waits for it.
func (g *streamGlue) resumed() {
	if g.target.markStream(g.claim, func(r *running) { r.synced, r.catchingUp = true, true }).synced {
		g.target.observer.Replayed(g.target.Key)
	}
}

// caughtUp ends a resumed stream's catch-up; the last one to end, after
// every replay, closes the target's held window.
func (g *streamGlue) caughtUp(ctx context.Context) error {
	if !g.target.markStream(g.claim, func(r *running) { r.catchingUp = false }).settled() {
		return nil
	}
	if err := g.target.sink.Sync(ctx, g.target.Key, nil, true); err != nil {
		return fmt.Errorf("telling the branch worker the target is live: %w", err)
	}
	return nil
}

// replayed forwards an object a replay reported, as the committer's.
func (g *streamGlue) replayed(ctx context.Context, ev watch.Event) error {
	// The tree is left behind: a replay queues every object of the scope,
	// mostly unchanged, and a tree weighs about six times its YAML; the few
	// that changed are parsed once by the planner.
	id, content, _, ok := g.render(ev)
	if !ok {
		return nil
	}
	if g.scope().Covers(id) {
		g.present = append(g.present, id.Name)
	}
	return g.emit(ctx, &liveWrite{kind: "upsert", write: branch.Write{ID: id, YAML: content, Sensitive: g.claim.Sensitive,
		Received: ev.Received, Replay: true}, digest: sanitize.ContentDigest(content)})
}

// render is an upserted object's sanitized YAML, unless it is not written:
// controller-owned, an operation the rule does not follow, one of the
// operator's Secrets, or refused.
func (g *streamGlue) render(ev watch.Event) (manifest.ObjectID, []byte, *yaml.Node, bool) {
	obj := ev.Object
	if discovery.IsControllerOwned(obj) || (!ev.Replay && !g.follows(ev.Type)) ||
		g.target.isOperatorSecret(g.claim.GVR, obj.GetNamespace(), obj.GetName()) {
		return manifest.ObjectID{}, nil, nil, false
	}
	id := g.objectID(obj)
	if g.claim.Sensitive && !g.target.sensitiveWritable() {
		g.target.refuse(v1alpha3.ReasonEncryptionRequired, id)
		return id, nil, nil, false
	}
	content, node, err := sanitize.RenderNode(obj)
	if err != nil {
		g.target.refuse(v1alpha3.ReasonMarshalFailed, id)
		g.target.log.Error(err, "cannot render an object as YAML; it is not written", "object", id.String())
		return id, nil, nil, false
	}
	return id, content, node, true
}

// synced hands the replay's sweep to the worker. A sensitive type that
// cannot be written is not swept either: Git keeps what it has rather than
// losing encrypted files to a configuration gap.
func (g *streamGlue) synced(ctx context.Context, reported []watch.ObjectKey) error {
	scope := g.scope()
	g.target.observer.ReplayEnded(g.target.Key, scope, reported)
	var sweep *branch.Sweep
	if !g.claim.Sensitive || g.target.sensitiveWritable() {
		// The worker takes the list: a stream keeps no copy of its objects'
		// identities between replays.
		sweep = &branch.Sweep{Scope: scope, Names: g.present}
	}
	g.present = nil
	streams := g.target.markStream(g.claim, func(r *running) { r.synced, r.catchingUp = true, false })
	if err := g.target.sink.Sync(ctx, g.target.Key, sweep, streams.settled()); err != nil {
		// The stream names the resource and namespace when it reports this.
		return fmt.Errorf("handing the sweep to the branch worker: %w", err)
	}
	if streams.synced {
		g.target.observer.Replayed(g.target.Key)
	}
	return nil
}

// scope is what the stream's sweep covers: its type and namespace.
func (g *streamGlue) scope() manifest.SweepScope {
	return manifest.SweepScope{Group: g.claim.GVR.Group, Kind: g.claim.Kind, Namespace: g.claim.Namespace}
}

// follows applies the rule's operations to a live event.
func (g *streamGlue) follows(typ apiwatch.EventType) bool {
	op := map[apiwatch.EventType]v1alpha3.OperationType{
		apiwatch.Added: v1alpha3.OperationCreate, apiwatch.Modified: v1alpha3.OperationUpdate, apiwatch.Deleted: v1alpha3.OperationDelete,
	}[typ]
	return len(g.claim.Operations) == 0 || slices.Contains(g.claim.Operations, op) || slices.Contains(g.claim.Operations, v1alpha3.OperationAll)
}

// objectID is the object's identity, its type as the stream's claim names
// it. Where the object's kind and namespace equal the stream's, the identity
// takes the stream's strings: the index keeps an identity per mirrored
// file, and each object's own copies (decoded from its JSON) were two
// small allocations an object for as long as the file exists.
func (g *streamGlue) objectID(obj *unstructured.Unstructured) manifest.ObjectID {
	kind := obj.GetKind()
	if kind == "" || kind == g.claim.Kind {
		kind = g.claim.Kind
	}
	namespace := obj.GetNamespace()
	if namespace == g.claim.Namespace {
		namespace = g.claim.Namespace
	}
	return manifest.ObjectID{
		Group: g.claim.GVR.Group, Version: g.claim.GVR.Version, Kind: kind, Resource: g.claim.GVR.Resource,
		Namespace: namespace, Name: obj.GetName(),
	}
}
