package discovery

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	k8sdiscovery "k8s.io/client-go/discovery"
	"k8s.io/utils/clock"
)

// DefaultGrace is how long a group/version that vanished from discovery is
// still reported, so a discovery blink never looks like a deleted type.
const DefaultGrace = 2 * time.Minute

// TypeInfo is what the catalog knows about one served (group, version,
// resource). Subresources ("deployments/scale") are never types.
type TypeInfo struct {
	GVR        schema.GroupVersionResource
	Kind       string
	Namespaced bool
	// Verbs the server serves for the resource, sorted.
	Verbs []string
	// Preferred marks the version a client uses when it names no version:
	// the group's preferred version when that version serves the resource,
	// otherwise the highest-priority served version that does (the same
	// choice kubectl makes). Exactly one version per (group, resource) is
	// preferred.
	Preferred bool
	// Followable is the verdict of Followability; Reason says why not.
	Followable bool
	Reason     string
	// Sensitive types are written only encrypted (core Secrets and
	// Policy.AdditionalSensitive).
	Sensitive bool
}

// Catalog is the API surface of one source cluster. Set the exported fields
// before the first Refresh and do not change them afterwards; the zero Grace
// means DefaultGrace and a nil Clock the real clock.
//
// Readers (Types, Lookup, Generation) never block on a running Refresh: they
// read an immutable snapshot that Refresh replaces atomically.
type Catalog struct {
	Discovery k8sdiscovery.DiscoveryInterfaceWithContext
	Policy    Policy
	Grace     time.Duration
	Clock     clock.PassiveClock

	// refreshMu serializes Refresh, so an older scan can never be applied
	// after a newer one, and guards facts.
	refreshMu sync.Mutex
	facts     surfaceFacts
	current   atomic.Pointer[snapshot]
}

// snapshot is one immutable published view of the catalog.
type snapshot struct {
	types      []TypeInfo // sorted by group, version, resource
	byGVR      map[schema.GroupVersionResource]int
	generation uint64
}

// Refresh scans discovery and updates the catalog.
//
// When some group/versions fail discovery, the rest of the scan is applied,
// the failed ones keep their last known facts, and Refresh returns an error
// wrapping *discovery.ErrGroupDiscoveryFailed (use
// discovery.GroupDiscoveryFailedErrorGroups to read it). Any other failure
// leaves the catalog untouched.
func (c *Catalog) Refresh(ctx context.Context) error {
	if c.Discovery == nil {
		return errors.New("refreshing the API catalog: no discovery client configured")
	}
	c.refreshMu.Lock()
	defer c.refreshMu.Unlock()

	groups, lists, err := c.Discovery.ServerGroupsAndResourcesWithContext(ctx)
	failed, partial := k8sdiscovery.GroupDiscoveryFailedErrorGroups(err)
	if err != nil && !partial {
		return fmt.Errorf("refreshing the API catalog: %w", err)
	}
	if len(groups) == 0 {
		// Every server serves the core group; an empty answer is a broken
		// response, not an empty cluster, and must not start removals.
		return errors.New("refreshing the API catalog: discovery returned no API groups")
	}
	c.facts.apply(scan{groups: groups, lists: lists, failed: failed}, c.now(), c.grace())
	c.publish(c.facts.types(c.Policy))
	if partial {
		return fmt.Errorf("refreshing the API catalog: %d group versions failed and keep their last known types: %w",
			len(failed), err)
	}
	return nil
}

// publish replaces the snapshot, bumping the generation only when the types
// or their verdicts changed, so consumers can skip recomputation otherwise.
func (c *Catalog) publish(types []TypeInfo) {
	previous := c.current.Load()
	generation := uint64(0)
	if previous != nil {
		if slices.EqualFunc(previous.types, types, typeInfoEqual) {
			return
		}
		generation = previous.generation
	} else if len(types) == 0 {
		return
	}
	next := &snapshot{types: types, byGVR: make(map[schema.GroupVersionResource]int, len(types)), generation: generation + 1}
	for i, t := range types {
		next.byGVR[t.GVR] = i
	}
	c.current.Store(next)
}

// Types returns every known type, sorted by group, version and resource. The
// result is the caller's own copy.
func (c *Catalog) Types() []TypeInfo {
	snap := c.current.Load()
	if snap == nil {
		return nil
	}
	out := make([]TypeInfo, len(snap.types))
	for i, t := range snap.types {
		out[i] = t.clone()
	}
	return out
}

// Lookup returns the type served as gvr, if known.
func (c *Catalog) Lookup(gvr schema.GroupVersionResource) (TypeInfo, bool) {
	snap := c.current.Load()
	if snap == nil {
		return TypeInfo{}, false
	}
	i, ok := snap.byGVR[gvr]
	if !ok {
		return TypeInfo{}, false
	}
	return snap.types[i].clone(), true
}

// Generation is 0 until a Refresh found types, and increases whenever the
// known types or any verdict on them change.
func (c *Catalog) Generation() uint64 {
	if snap := c.current.Load(); snap != nil {
		return snap.generation
	}
	return 0
}

func (c *Catalog) now() time.Time {
	if c.Clock == nil {
		return time.Now()
	}
	return c.Clock.Now()
}

func (c *Catalog) grace() time.Duration {
	if c.Grace <= 0 {
		return DefaultGrace
	}
	return c.Grace
}

func (t TypeInfo) clone() TypeInfo {
	t.Verbs = slices.Clone(t.Verbs)
	return t
}

func typeInfoEqual(a, b TypeInfo) bool {
	return a.GVR == b.GVR && a.Kind == b.Kind && a.Namespaced == b.Namespaced &&
		a.Preferred == b.Preferred && a.Followable == b.Followable && a.Reason == b.Reason &&
		a.Sensitive == b.Sensitive && slices.Equal(a.Verbs, b.Verbs)
}
