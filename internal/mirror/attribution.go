package mirror

import (
	"context"
	"time"

	apiwatch "k8s.io/apimachinery/pkg/watch"

	"github.com/configbutler/gitops-reverser/internal/attribution"
	"github.com/configbutler/gitops-reverser/internal/branch"
	"github.com/configbutler/gitops-reverser/internal/facts"
	"github.com/configbutler/gitops-reverser/internal/rules"
	"github.com/configbutler/gitops-reverser/internal/watch"
)

// Attribution names the authors of a target's live changes. A nil
// *Attribution is configured-author mode: every change is the committer's.
type Attribution struct {
	// Route is the audit route of the target's source: the scope its
	// facts are joined in.
	Route string
	// Resolver waits (bounded) for the fact that names who made a change.
	Resolver Resolver
	// Follow makes sure the facts of a stream reach the resolver's index; a
	// stream calls it before its first event.
	Follow func(facts.StreamKey)
}

// Resolver is the attribution join (attribution.Resolver).
type Resolver interface {
	Resolve(ctx context.Context, q attribution.Query) attribution.Resolution
}

// stream is the fact stream of a claim's type.
func (a *Attribution) stream(c rules.Claim) facts.StreamKey {
	return facts.StreamKey{Route: a.Route, Group: c.GVR.Group, Resource: c.GVR.Resource}
}

// authorOf names the author of a live change; a replay has none (its
// writes and sweeps are the committer's), nor has anything in
// configured-author mode. digest is sanitize.ContentDigest of what the
// change writes ("" for a removal): an admission review is confirmed by
// it. The wait runs on the object's lane of the claim's stream
// (watch.Stream.Prepare): it holds back the object's own later events,
// never another object's.
func (a *Attribution) authorOf(ctx context.Context, c rules.Claim, ev watch.Event, digest string) branch.Author {
	if a == nil || ev.Replay {
		return branch.Author{}
	}
	res := a.Resolver.Resolve(ctx, query(a.stream(c), c.GVR.Version, ev, digest))
	if !res.Resolved() {
		return attribution.GitAuthor(nil)
	}
	return attribution.GitAuthor(&res.Actor)
}

// query is the attribution question a watch event asks.
func query(stream facts.StreamKey, version string, ev watch.Event, digest string) attribution.Query {
	obj := ev.Object
	return attribution.Query{
		Stream: stream, Version: version, Namespace: obj.GetNamespace(), Name: obj.GetName(),
		UID: string(obj.GetUID()), ResourceVersion: obj.GetResourceVersion(), Removal: ev.Kind == watch.Delete,
		Created: ev.Type == apiwatch.Added, PreviousVersion: ev.PreviousVersion, Digest: digest,
		Labels: obj.GetLabels(), Received: ev.Received, WrittenAt: writtenAt(ev),
	}
}

// writtenAt is when the API server dates a removal: when the deletion was
// requested (the deletionTimestamp it stamped, which lies the grace period
// after the request); zero when it removed the object at once, and for a
// write: dating writes by their latest managedFields time left 57 of 72
// measured /scale writes unresolved (scenario I's coverage), so a write's
// review is bounded by the event's receipt instead.
func writtenAt(ev watch.Event) time.Time {
	if ev.Kind != watch.Delete {
		return time.Time{}
	}
	stamped := ev.Object.GetDeletionTimestamp()
	if stamped == nil {
		return time.Time{}
	}
	var grace int64
	if g := ev.Object.GetDeletionGracePeriodSeconds(); g != nil {
		grace = *g
	}
	return stamped.Add(-time.Duration(grace) * time.Second)
}
