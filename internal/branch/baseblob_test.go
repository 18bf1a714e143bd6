package branch_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/forges/gogit"
	"github.com/configbutler/gitops-reverser/gitfile"
	"github.com/configbutler/gitops-reverser/internal/branch"
)

// baseChecked compares the base blob of every change the worker sends
// with what git itself lists at the commit's parent (in a chain, the
// commit before, from the changes before it), and records each.
type baseChecked struct {
	*gated
	t    *testing.T
	repo string

	mu    sync.Mutex
	wrong []string
	kinds map[string]int // "create", "update", "delete"
}

func (b *baseChecked) Commit(ctx context.Context, req forges.CommitRequest) (forges.CommitResult, error) {
	b.check([]forges.CommitRequest{req})
	return b.gated.Commit(ctx, req)
}

func (b *baseChecked) CommitChain(ctx context.Context, reqs []forges.CommitRequest) ([]forges.CommitResult, error) {
	b.check(reqs)
	return b.gated.CommitChain(ctx, reqs)
}

func (b *baseChecked) check(reqs []forges.CommitRequest) {
	tree := b.listed(reqs[0].ExpectedHead)
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, req := range reqs {
		for _, c := range req.Changes {
			if c.BaseBlob != tree[c.Path] {
				b.wrong = append(b.wrong, c.Path+": sent "+c.BaseBlob+", parent has "+tree[c.Path])
			}
			switch {
			case c.Delete:
				b.kinds["delete"]++
				delete(tree, c.Path)
				continue
			case c.BaseBlob == "":
				b.kinds["create"]++
			default:
				b.kinds["update"]++
			}
			tree[c.Path] = gitfile.BlobID(c.Content, "")
		}
	}
}

// listed is path -> blob id at commit, as git ls-tree prints it.
func (b *baseChecked) listed(commit string) map[string]string {
	tree := map[string]string{}
	if commit == "" {
		return tree
	}
	out, err := git.Git(b.repo, "ls-tree", "-r", commit)
	require.NoError(b.t, err)
	for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		meta, path, ok := strings.Cut(line, "\t")
		if fields := strings.Fields(meta); ok && len(fields) == 3 {
			tree[path] = fields[2]
		}
	}
	return tree
}

// TestEveryChangeCarriesTheBlobItsPathHoldsAtTheParent: creates, updates
// and deletes, alone, in a chain planned before the forge answered for the
// commits before, and after a conflict reloaded the tree, each name the
// blob git lists for the path at the commit's parent (none for a new path).
func TestEveryChangeCarriesTheBlobItsPathHoldsAtTheParent(t *testing.T) {
	b := &baseChecked{gated: &gated{entered: make(chan struct{}), gate: make(chan struct{})}, t: t, repo: "base-blobs",
		kinds: map[string]int{}}
	w := newWorker(t, b.repo, func(f forges.Forge) forges.Forge {
		b.Client = f.(*gogit.Client)
		return b
	}, nil)
	alice, bob := branch.Author{Name: "alice", Email: "alice@example.com"}, branch.Author{Name: "bob", Email: "bob@example.com"}
	write(t, w, alice, cm("a", "1"))
	write(t, w, bob, cm("b", "1")) // closes alice's window: its commit waits at the gate
	<-b.entered
	write(t, w, alice, cm("a", "2")) // the chain behind it updates what it wrote
	write(t, w, bob, cm("a", "3"))   // and what the chain itself wrote
	write(t, w, alice, branch.Write{ID: cm("b", "").ID})
	close(b.gate)
	flush(t, w)
	require.GreaterOrEqual(t, b.chains.Load(), int32(1), "the windows behind the held commit went out as a chain")

	pushExternal(t, b.repo, "human.txt") // the worker's head is stale: its commit conflicts and reloads
	write(t, w, bob, cm("a", "4"))
	write(t, w, bob, cm("c", "1"))
	flush(t, w)
	require.Contains(t, show(t, b.repo, "mirror/team/configmaps/a.yaml"), `v: "4"`)

	b.mu.Lock()
	defer b.mu.Unlock()
	require.Empty(t, b.wrong, "every base blob is the parent's")
	require.Positive(t, b.kinds["create"])
	require.Positive(t, b.kinds["update"])
	require.Positive(t, b.kinds["delete"])
}
