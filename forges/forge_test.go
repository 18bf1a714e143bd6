package forges_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges"
)

type serialReader struct{ forges.Reader }

type parallelReader struct {
	forges.Reader
	n int
}

func (p parallelReader) ReadConcurrency() int { return p.n }

func TestAForgeIsReadOneBlobAtATimeUnlessItSaysMore(t *testing.T) {
	require.Equal(t, 1, forges.ReadConcurrency(serialReader{}))
	require.Equal(t, 8, forges.ReadConcurrency(parallelReader{n: 8}))
	require.Equal(t, 1, forges.ReadConcurrency(parallelReader{n: 0}), "never less than one")
}
