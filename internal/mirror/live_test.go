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
