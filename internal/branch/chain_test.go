package branch_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/forges/gogit"
	"github.com/configbutler/gitops-reverser/internal/branch"
)

// gated holds the first commit until the test opens the gate, so the
// events sent meanwhile wait in the worker's queue, and counts the chained
// pushes and their lengths.
type gated struct {
	*gogit.Client
	entered, gate chan struct{}
	once          sync.Once
	chains        atomic.Int32
	chained       atomic.Int32
}

func (g *gated) hold() {
	g.once.Do(func() {
		close(g.entered)
		<-g.gate
	})
}

func (g *gated) Commit(ctx context.Context, req forges.CommitRequest) (forges.CommitResult, error) {
	g.hold()
	return g.Client.Commit(ctx, req)
}

func (g *gated) CommitChain(ctx context.Context, reqs []forges.CommitRequest) ([]forges.CommitResult, error) {
	g.hold()
	g.chains.Add(1)
	g.chained.Add(int32(len(reqs)))
	return g.Client.CommitChain(ctx, reqs)
}

func TestWindowsClosedWhileACommitIsUnderWayLandAsOneChainAsIfCommittedOneByOne(t *testing.T) {
	g := &gated{entered: make(chan struct{}), gate: make(chan struct{})}
	w := newWorker(t, "chain", func(f forges.Forge) forges.Forge {
		g.Client = f.(*gogit.Client)
		return g
	}, nil)
	alice, bob, carol := branch.Author{Name: "alice", Email: "alice@example.com"},
		branch.Author{Name: "bob", Email: "bob@example.com"}, branch.Author{Name: "carol", Email: "carol@example.com"}
	write(t, w, alice, cm("a", "1"))
	write(t, w, bob, cm("b", "1")) // closes alice's window: its commit waits at the gate
	<-g.entered
	write(t, w, carol, cm("a", "2")) // closes bob's window
	write(t, w, alice, cm("c", "1")) // closes carol's
	write(t, w, bob, cm("a", "3"))   // closes alice's second
	close(g.gate)
	flush(t, w)

	require.Equal(t, []string{
		"bob|Update ConfigMap team/a",
		"alice|Create ConfigMap team/c",
		"carol|Update ConfigMap team/a",
		"bob|Create ConfigMap team/b",
		"alice|Create ConfigMap team/a",
	}, commits(t, "chain"), "each window is its own commit, in order, with its author")
	require.Equal(t, int32(1), g.chains.Load(), "the windows closed behind the held commit went out as one push")
	// Three windows closed behind the held commit; the flush's own may
	// join them when it reaches the queue before the chain goes out.
	require.GreaterOrEqual(t, g.chained.Load(), int32(3))
	for rev, want := range map[string]string{"main~1": `v: "2"`, "main~2": `v: "2"`, "main~3": `v: "1"`, "main": `v: "3"`} {
		content, err := git.ReadFile("chain", rev, "mirror/team/configmaps/a.yaml")
		require.NoError(t, err)
		require.Contains(t, content, want, "a.yaml at %s holds what its commit wrote", rev)
	}
	_, err := git.ReadFile("chain", "main~3", "mirror/team/configmaps/c.yaml")
	require.Error(t, err, "bob's commit does not carry alice's later write")
}
