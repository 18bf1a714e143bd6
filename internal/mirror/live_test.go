package mirror

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/sanitize"
	"github.com/configbutler/gitops-reverser/internal/watch"
)

// The stream remembers what it last wrote of an object by the digest's
// bytes and answers for the same hex digest, and only for it.
func TestEmittedContentHoldsWhatTheStreamLastWrote(t *testing.T) {
	var e emittedContent
	key := watch.ObjectKey{Namespace: "team", Name: "cm"}
	first, second := sanitize.ContentDigest([]byte("a: 1\n")), sanitize.ContentDigest([]byte("a: 2\n"))
	require.False(t, e.holds(key, first))

	e.remember(key, first)
	require.True(t, e.holds(key, first))
	require.False(t, e.holds(key, second))
	require.False(t, e.holds(watch.ObjectKey{Namespace: "team", Name: "other"}, first))
	require.False(t, e.holds(key, ""), "a delete's empty digest is never held")

	e.remember(key, second)
	require.True(t, e.holds(key, second))
	e.forget(key)
	require.False(t, e.holds(key, second))
	e.remember(key, first)
	e.reset()
	require.False(t, e.holds(key, first))
}

// Two objects whose keys hash alike share a slot, and still neither's
// write is ever dropped for the other's: an object's rendering names it,
// so its digest is not the other's. Sharing costs a write Git already
// holds, never a change (the argument on emittedContent).
func TestObjectsSharingASlotNeverDropEachOthersChange(t *testing.T) {
	e := emittedContent{keyHash: func(watch.ObjectKey) uint64 { return 7 }}
	render := func(name, value string) string {
		return sanitize.ContentDigest([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name +
			"\n  namespace: team\ndata:\n  a: \"" + value + "\"\n"))
	}
	one, two := watch.ObjectKey{Namespace: "team", Name: "one"}, watch.ObjectKey{Namespace: "team", Name: "two"}

	e.remember(one, render("one", "1"))
	require.False(t, e.holds(two, render("two", "1")), "the same data under another name is another rendering")
	e.remember(two, render("two", "1"))
	require.False(t, e.holds(one, render("one", "1")), "the shared slot now holds two's: one's unchanged write goes out again")
	require.True(t, e.holds(two, render("two", "1")))
	e.forget(one)
	require.False(t, e.holds(two, render("two", "1")), "one's delete emptied the slot: two's next event is written again")
}

// The stream keeps half of the digest, and only a ContentDigest's: any
// other string is never held.
func TestEmittedContentHoldsOnlyAContentDigest(t *testing.T) {
	var e emittedContent
	key := watch.ObjectKey{Namespace: "team", Name: "cm"}
	d := sanitize.ContentDigest([]byte("a: 1\n"))
	e.remember(key, d)
	require.True(t, e.holds(key, d))
	require.False(t, e.holds(key, d[:32]), "half a digest is not a digest")
	require.False(t, e.holds(key, d[:63]+"x"), "not hex")
	e.remember(key, "not a digest")
	require.False(t, e.holds(key, d), "remembering something else forgets the object")
}
