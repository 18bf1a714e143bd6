// Package forgetest is the forge contract suite: one set of tests that every
// forge implementation runs unchanged against its real (or documented
// simulated) server, so the branch worker can rely on the same behaviour
// from all of them.
package forgetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/gitfile"
)

// Commit is what a repository independently reports about a commit.
type Commit struct {
	ID             string
	Message        string
	AuthorName     string
	AuthorEmail    string
	AuthorDate     time.Time
	CommitterName  string
	CommitterEmail string
	CommitterDate  time.Time
	Parents        []string
}

// Repo is one repository under test: a forge client for it and ways to
// observe and change it that do not go through that client.
type Repo struct {
	Forge forges.Forge
	// File reads a file at the head of branch; ok is false when it is absent.
	File func(t *testing.T, branch, path string) (content string, ok bool)
	// Head describes the commit at the head of branch.
	Head func(t *testing.T, branch string) Commit
	// ExternalCommit commits a file to branch as another writer would.
	ExternalCommit func(t *testing.T, branch, path, content string)
	// WrongCredentials is a client for the same repository whose
	// credentials the server refuses.
	WrongCredentials forges.Forge
	// CommitObject returns a commit exactly as the server stores it (what
	// `git cat-file commit` prints), for git verify-commit. Not needed when
	// Options.RefusesSigner is set.
	CommitObject func(t *testing.T, id string) []byte
}

// Fixture makes repositories on the forge under test.
type Fixture interface {
	// NewRepo creates a repository. A non-empty one has a first commit on
	// main holding seed (path -> content).
	NewRepo(t *testing.T, name string, seed map[string]string) Repo
}

// RateLimiter is implemented by fixtures whose forge meters requests. The
// fixture, not the suite, knows how its forge is made to refuse and which
// clock its limits run on.
type RateLimiter interface {
	// LimitWrites makes the forge refuse r's client as rate limited from
	// its next write on, asking it to wait about wait, and admit it again
	// once wait has passed. A forge that meters every request may refuse
	// the reads that precede the write as well.
	LimitWrites(t *testing.T, r Repo, wait time.Duration)
	// WaitOut lets d pass on the clock the forge and the client measure
	// rate limits on: a sleep, or a step of a simulated clock.
	WaitOut(t *testing.T, d time.Duration)
}

// Options tune the suite to what a forge can attest.
type Options struct {
	// CommitterIsTokenUser: the forge records its own user as committer
	// (GitLab), so only the author is compared.
	CommitterIsTokenUser bool
	// AuthorDateIsServerTime: the forge stamps the author date itself
	// (GitLab), so it is not compared with the requested one.
	AuthorDateIsServerTime bool
	// RefusesSigner: the forge's API cannot carry a commit signature
	// (Gitea, GitLab), so a signed request must be refused, never written
	// unsigned.
	RefusesSigner bool
}

// Run runs the whole contract against f.
func Run(t *testing.T, f Fixture, o Options) {
	t.Run("ManyFilesPutAndDeletedInOneCommit", func(t *testing.T) { manyFiles(t, f) })
	t.Run("AuthorCommitterAndDatesPreserved", func(t *testing.T) { identities(t, f, o) })
	t.Run("NewBranch", func(t *testing.T) { newBranch(t, f) })
	t.Run("EmptyRepository", func(t *testing.T) { emptyRepository(t, f) })
	t.Run("CommitsInABranchHistory", func(t *testing.T) { history(t, f) })
	t.Run("RaceWithAnExternalCommit", func(t *testing.T) { race(t, f) })
	t.Run("ChainOfCommitsInOneBranchMove", func(t *testing.T) { chain(t, f) })
	t.Run("ChangesCarryTheirBaseBlobs", func(t *testing.T) { baseBlobs(t, f) })
	t.Run("CredentialsRefused", func(t *testing.T) { refused(t, f) })
	t.Run("RateLimitedWriteWaitsAndLosesNothing", func(t *testing.T) { rateLimitedWrite(t, f) })
	t.Run("SignedCommitVerifiesWithGit", func(t *testing.T) { signedCommit(t, f, o) })
	t.Run("MergeParentCommit", func(t *testing.T) { mergeParent(t, f) })
	t.Run("MergeParentInAChain", func(t *testing.T) { mergeParentInAChain(t, f) })
}

var (
	author    = forges.Signature{Name: "Alice Example", Email: "alice@example.com", When: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)}
	committer = forges.Signature{Name: "GitOps Reverser", Email: "noreply@configbutler.ai", When: time.Date(2026, 3, 4, 5, 6, 9, 0, time.UTC)}
)

func commitRequest(t *testing.T, branch, expected string, changes ...gitfile.Change) forges.CommitRequest {
	return forges.CommitRequest{
		Branch: branch, ExpectedHead: expected, Message: "contract: " + t.Name() + "\n",
		Author: author, Committer: committer, Changes: changes,
	}
}

func commit(t *testing.T, r Repo, branch, expected string, changes ...gitfile.Change) forges.CommitResult {
	t.Helper()
	res, err := r.Forge.Commit(context.Background(), commitRequest(t, branch, expected, changes...))
	require.NoError(t, err)
	require.NotEmpty(t, res.Commit)
	return res
}

func head(t *testing.T, r Repo, branch string) string {
	t.Helper()
	h, err := r.Forge.Head(context.Background(), branch)
	require.NoError(t, err)
	return h
}

func put(path, content string) gitfile.Change {
	return gitfile.Change{Path: path, Content: []byte(content)}
}

func del(path string) gitfile.Change { return gitfile.Change{Path: path, Delete: true} }

// Update puts content at a path that holds previous at the commit's parent,
// naming previous's blob (in a SHA-1 repository) as the base, as the
// branch worker does.
func Update(path, previous, content string) gitfile.Change {
	return gitfile.Change{Path: path, Content: []byte(content), BaseBlob: gitfile.BlobID([]byte(previous), "")}
}

// Delete deletes a path that holds previous at the commit's parent.
func Delete(path, previous string) gitfile.Change {
	return gitfile.Change{Path: path, Delete: true, BaseBlob: gitfile.BlobID([]byte(previous), "")}
}

func manyFiles(t *testing.T, f Fixture) {
	seed := map[string]string{}
	for i := range 10 {
		seed[fmt.Sprintf("old/file-%02d.yaml", i)] = fmt.Sprintf("n: %d\n", i)
	}
	seed["keep.yaml"] = "keep: true\n"
	r := f.NewRepo(t, "many-files", seed)
	var changes []gitfile.Change
	for i := range 30 {
		changes = append(changes, put(fmt.Sprintf("new/dir-%d/file-%02d.yaml", i%3, i), fmt.Sprintf("n: %d\n", i)))
	}
	for i := range 10 {
		changes = append(changes, Delete(fmt.Sprintf("old/file-%02d.yaml", i), fmt.Sprintf("n: %d\n", i)))
	}
	before := head(t, r, "main")
	res := commit(t, r, "main", before, changes...)
	require.Equal(t, res.Commit, head(t, r, "main"))
	require.Equal(t, []string{before}, r.Head(t, "main").Parents, "one commit on top of the expected head")
	for i := range 30 {
		content, ok := r.File(t, "main", fmt.Sprintf("new/dir-%d/file-%02d.yaml", i%3, i))
		require.True(t, ok)
		require.Equal(t, fmt.Sprintf("n: %d\n", i), content)
	}
	for i := range 10 {
		_, ok := r.File(t, "main", fmt.Sprintf("old/file-%02d.yaml", i))
		require.False(t, ok, "deleted in the same commit")
	}
	kept, ok := r.File(t, "main", "keep.yaml")
	require.True(t, ok)
	require.Equal(t, "keep: true\n", kept, "an untouched file stays")
	entries, err := r.Forge.Tree(context.Background(), res.Commit, "new/dir-1")
	require.NoError(t, err)
	require.Len(t, entries, 10, "the forge's own tree read agrees")
}

func identities(t *testing.T, f Fixture, o Options) {
	r := f.NewRepo(t, "identities", map[string]string{"a.yaml": "a: 1\n"})
	commit(t, r, "main", head(t, r, "main"), put("b.yaml", "b: 1\n"))
	c := r.Head(t, "main")
	require.Equal(t, author.Name, c.AuthorName)
	require.Equal(t, author.Email, c.AuthorEmail)
	if !o.AuthorDateIsServerTime {
		require.True(t, author.When.Equal(c.AuthorDate), "author date %s, want %s", c.AuthorDate, author.When)
	}
	if !o.CommitterIsTokenUser {
		require.Equal(t, committer.Name, c.CommitterName)
		require.Equal(t, committer.Email, c.CommitterEmail)
		require.True(t, committer.When.Equal(c.CommitterDate), "committer date %s, want %s", c.CommitterDate, committer.When)
	}
	require.Contains(t, c.Message, "contract: ")
}

// newBranch is how the branch worker starts a branch that does not exist
// yet: from the head of the default branch the forge reports.
func newBranch(t *testing.T, f Fixture) {
	r := f.NewRepo(t, "new-branch", map[string]string{"base.yaml": "base: 1\n"})
	require.Equal(t, "main", defaultBranch(t, r), "the seeded branch is the default")
	base := head(t, r, "main")
	_, err := r.Forge.Head(context.Background(), "mirror")
	require.ErrorIs(t, err, forges.ErrNotFound, "the branch does not exist yet")
	res, err := r.Forge.Commit(context.Background(), forges.CommitRequest{
		Branch: "mirror", BaseHead: base, Message: "contract: new branch\n", Author: author, Committer: committer,
		Changes: []gitfile.Change{put("mirror.yaml", "m: 1\n")},
	})
	require.NoError(t, err)
	require.Equal(t, res.Commit, head(t, r, "mirror"))
	require.Equal(t, []string{base}, r.Head(t, "mirror").Parents, "the new branch starts from BaseHead")
	_, ok := r.File(t, "mirror", "base.yaml")
	require.True(t, ok)
	require.Equal(t, base, head(t, r, "main"), "main did not move")
}

// history: a commit is in its descendants' history, not in that of its
// ancestors or of a line that diverged before it; a commit the server does
// not know is in no history and is no error.
func history(t *testing.T, f Fixture) {
	r := f.NewRepo(t, "history", map[string]string{"base.yaml": "base: 1\n"})
	reader, ok := r.Forge.(forges.HistoryReader)
	require.True(t, ok, "the forge tells whether a commit is in a branch's history")
	first := head(t, r, "main")
	// The side line starts while first is still a branch head: a plain Git
	// server need not serve a commit by id.
	side, err := r.Forge.Commit(context.Background(), forges.CommitRequest{
		Branch: "side", BaseHead: first, Message: "contract: a diverged line\n", Author: author, Committer: committer,
		Changes: []gitfile.Change{put("side.yaml", "s: 1\n")},
	})
	require.NoError(t, err)
	second := commit(t, r, "main", first, put("a.yaml", "a: 1\n")).Commit
	third := commit(t, r, "main", second, put("b.yaml", "b: 1\n")).Commit
	inHistory := func(head, commit string) bool {
		t.Helper()
		found, err := reader.InHistory(context.Background(), head, commit, 50)
		require.NoError(t, err)
		return found
	}
	require.True(t, inHistory(third, third), "a commit is in its own history")
	require.True(t, inHistory(third, second))
	require.True(t, inHistory(third, first), "two commits back")
	require.False(t, inHistory(first, third), "a descendant is not in an ancestor's history")
	require.False(t, inHistory(third, side.Commit), "a diverged commit is not in the history")
	require.False(t, inHistory(side.Commit, second))
	require.False(t, inHistory(third, "0123456789abcdef0123456789abcdef01234567"), "an unknown commit")
}

func emptyRepository(t *testing.T, f Fixture) {
	r := f.NewRepo(t, "empty", nil)
	require.Empty(t, defaultBranch(t, r), "an empty repository has no default branch to start from")
	_, err := r.Forge.Head(context.Background(), "main")
	require.True(t, errors.Is(err, forges.ErrEmptyRepository) || errors.Is(err, forges.ErrNotFound),
		"an empty repository has no head: %v", err)
	res := commit(t, r, "main", "", put("first/file.yaml", "first: true\n"))
	require.Equal(t, res.Commit, head(t, r, "main"))
	content, ok := r.File(t, "main", "first/file.yaml")
	require.True(t, ok)
	require.Equal(t, "first: true\n", content)
	require.Equal(t, "main", defaultBranch(t, r), "the first branch is the default")
}

func defaultBranch(t *testing.T, r Repo) string {
	t.Helper()
	brancher, ok := r.Forge.(forges.DefaultBrancher)
	require.True(t, ok, "%T does not report its default branch", r.Forge)
	name, err := brancher.DefaultBranch(context.Background())
	require.NoError(t, err)
	return name
}

func race(t *testing.T, f Fixture) {
	r := f.NewRepo(t, "race", map[string]string{"ours.yaml": "v: 1\n", "theirs.yaml": "v: 1\n"})
	stale := head(t, r, "main")
	r.ExternalCommit(t, "main", "theirs.yaml", "v: external\n")
	moved := head(t, r, "main")
	require.NotEqual(t, stale, moved)

	_, err := r.Forge.Commit(context.Background(), forges.CommitRequest{
		Branch: "main", ExpectedHead: stale, Message: "contract: stale\n", Author: author, Committer: committer,
		Changes: []gitfile.Change{Update("ours.yaml", "v: 1\n", "v: 2\n")},
	})
	require.ErrorIs(t, err, forges.ErrConflict, "a commit on a stale head is refused")
	require.Equal(t, moved, head(t, r, "main"), "the external commit is still the head")
	theirs, _ := r.File(t, "main", "theirs.yaml")
	require.Equal(t, "v: external\n", theirs, "nothing was reverted")

	commit(t, r, "main", moved, Update("ours.yaml", "v: 1\n", "v: 2\n"))
	ours, _ := r.File(t, "main", "ours.yaml")
	require.Equal(t, "v: 2\n", ours, "the retry on the new head lands")
	theirs, _ = r.File(t, "main", "theirs.yaml")
	require.Equal(t, "v: external\n", theirs, "and keeps the external change")
}

// chain is a backlog committed by a forge that moves the branch once for
// several commits (forges.ChainCommitter): each commit has its own author
// and content, on the one before, and a stale head refuses them all.
func chain(t *testing.T, f Fixture) {
	r := f.NewRepo(t, "chain", map[string]string{"a.yaml": "v: 0\n"})
	chainer, ok := r.Forge.(forges.ChainCommitter)
	if !ok {
		t.Skip("this forge commits one request at a time")
	}
	start := head(t, r, "main")
	reqs := make([]forges.CommitRequest, 3)
	for i := range reqs {
		reqs[i] = commitRequest(t, "main", start, Update("a.yaml", fmt.Sprintf("v: %d\n", i), fmt.Sprintf("v: %d\n", i+1)),
			put(fmt.Sprintf("only-%d.yaml", i), "x: 1\n"))
		reqs[i].Author.Name = fmt.Sprintf("Author %d", i)
	}
	reqs[2].Changes = append(reqs[2].Changes, Delete("only-0.yaml", "x: 1\n"))
	results, err := chainer.CommitChain(context.Background(), reqs)
	require.NoError(t, err)
	require.Len(t, results, 3)
	require.Equal(t, results[2].Commit, head(t, r, "main"), "the branch moved to the last commit")
	c := r.Head(t, "main")
	require.Equal(t, "Author 2", c.AuthorName)
	require.Equal(t, []string{results[1].Commit}, c.Parents, "each commit is on the one before")
	content, _ := r.File(t, "main", "a.yaml")
	require.Equal(t, "v: 3\n", content)
	_, ok = r.File(t, "main", "only-0.yaml")
	require.False(t, ok, "the last commit's delete landed")
	require.Contains(t, results[0].Blobs, "only-0.yaml", "each result names its own puts")
	require.NotContains(t, results[0].Blobs, "only-1.yaml")

	r.ExternalCommit(t, "main", "theirs.yaml", "v: external\n")
	moved := head(t, r, "main")
	stale := []forges.CommitRequest{commitRequest(t, "main", results[2].Commit, Update("a.yaml", "v: 3\n", "v: 4\n")),
		commitRequest(t, "main", "", Update("a.yaml", "v: 4\n", "v: 5\n"))}
	_, err = chainer.CommitChain(context.Background(), stale)
	require.ErrorIs(t, err, forges.ErrConflict, "a chain on a stale head is refused")
	require.Equal(t, moved, head(t, r, "main"), "no commit of a refused chain is on the branch")
}

// baseBlobs: each change names the blob its path holds at the commit's
// parent (none for a new path; in a chain, what the commit before wrote),
// and the forge creates, updates and deletes by it without reading the
// tree. A base blob gone stale with the head (another writer changed the
// file) is a conflict that keeps the other writer's change.
func baseBlobs(t *testing.T, f Fixture) {
	r := f.NewRepo(t, "base-blobs", map[string]string{"kept.yaml": "v: 1\n", "changed.yaml": "v: 1\n", "deleted.yaml": "v: 1\n"})
	first := commit(t, r, "main", head(t, r, "main"), Update("changed.yaml", "v: 1\n", "v: 2\n"),
		Delete("deleted.yaml", "v: 1\n"), put("created.yaml", "v: 1\n"), del("never-there.yaml"))
	requireFiles(t, r, map[string]string{"kept.yaml": "v: 1\n", "changed.yaml": "v: 2\n", "created.yaml": "v: 1\n"},
		"deleted.yaml", "never-there.yaml")
	require.Equal(t, gitfile.BlobID([]byte("v: 2\n"), first.Commit), first.Blobs["changed.yaml"],
		"the result names the blob the next commit's change has as its base")

	// The second commit's base blobs are the ones the first wrote: in a
	// chain it is made before the forge has answered for the first.
	reqs := []forges.CommitRequest{
		commitRequest(t, "main", first.Commit, Update("changed.yaml", "v: 2\n", "v: 3\n"), Update("created.yaml", "v: 1\n", "v: 2\n")),
		commitRequest(t, "main", "", Update("changed.yaml", "v: 3\n", "v: 4\n"), Delete("created.yaml", "v: 2\n"),
			put("deleted.yaml", "v: back\n")),
	}
	var last string
	if chainer, ok := r.Forge.(forges.ChainCommitter); ok {
		results, err := chainer.CommitChain(context.Background(), reqs)
		require.NoError(t, err)
		last = results[1].Commit
	} else {
		second := commit(t, r, "main", first.Commit, reqs[0].Changes...)
		last = commit(t, r, "main", second.Commit, reqs[1].Changes...).Commit
	}
	require.Equal(t, last, head(t, r, "main"))
	requireFiles(t, r, map[string]string{"kept.yaml": "v: 1\n", "changed.yaml": "v: 4\n", "deleted.yaml": "v: back\n"}, "created.yaml")

	r.ExternalCommit(t, "main", "changed.yaml", "v: external\n")
	_, err := r.Forge.Commit(context.Background(), commitRequest(t, "main", last, Update("changed.yaml", "v: 4\n", "v: ours\n")))
	require.ErrorIs(t, err, forges.ErrConflict, "a stale base blob on a stale head is refused")
	requireFiles(t, r, map[string]string{"changed.yaml": "v: external\n"})
}

// requireFiles checks the files at the head of main: present with their
// content, and absent.
func requireFiles(t *testing.T, r Repo, present map[string]string, absent ...string) {
	t.Helper()
	requireBranchFiles(t, r, "main", present, absent...)
}

func refused(t *testing.T, f Fixture) {
	r := f.NewRepo(t, "refused", map[string]string{"a.yaml": "a: 1\n"})
	_, err := r.WrongCredentials.Head(context.Background(), "main")
	require.ErrorIs(t, err, forges.ErrUnauthorized, "refused credentials read as unauthorized: %v", err)
	_, err = r.WrongCredentials.Commit(context.Background(), forges.CommitRequest{
		Branch: "main", ExpectedHead: head(t, r, "main"), Message: "x\n", Author: author, Committer: committer,
		Changes: []gitfile.Change{put("b.yaml", "b: 1\n")},
	})
	require.Error(t, err)
	require.True(t, errors.Is(err, forges.ErrUnauthorized) || errors.Is(err, forges.ErrForbidden), "%v", err)
}

// askedRateLimitWait is the wait the suite asks a forge to impose: whole
// seconds, because Retry-After counts seconds, and short, because a forge
// on the wall clock makes the suite sleep it.
const askedRateLimitWait = time.Second

// longestAcceptedRateLimitWait bounds the wait a forge may answer with, so
// one that ignores the asked wait fails instead of stalling the suite.
const longestAcceptedRateLimitWait = 2 * time.Second

// rateLimitedWrite: a commit the forge refuses as rate limited leaves the
// branch and the files as they were and says how long to wait; once that
// wait has passed the very same request lands whole. The branch worker
// relies on this to keep its pending writes and retry them unchanged.
func rateLimitedWrite(t *testing.T, f Fixture) {
	limiter, ok := f.(RateLimiter)
	if !ok {
		t.Skip("the forge does not meter requests")
	}
	r := f.NewRepo(t, "rate-limited", map[string]string{"kept.yaml": "v: 1\n", "changed.yaml": "v: 1\n", "deleted.yaml": "v: 1\n"})
	before := head(t, r, "main")
	req := commitRequest(t, "main", before, rateLimitedChanges()...)

	limiter.LimitWrites(t, r, askedRateLimitWait)
	_, err := r.Forge.Commit(context.Background(), req)
	require.ErrorIs(t, err, forges.ErrRateLimited, "the refused commit reads as rate limited")
	wait := forges.RetryAfter(err)
	require.Positive(t, wait, "the forge says how long to wait: %v", err)
	require.LessOrEqual(t, wait, longestAcceptedRateLimitWait, "the forge asked for about %s", askedRateLimitWait)
	// Observed through the fixture: the client may be held back from
	// reading too.
	require.Equal(t, before, r.Head(t, "main").ID, "the refused commit did not move the branch")
	requireNothingWritten(t, r)

	limiter.WaitOut(t, wait)
	res, err := r.Forge.Commit(context.Background(), req)
	require.NoError(t, err, "the same commit on the same head lands once the wait is over")
	landed := r.Head(t, "main")
	require.Equal(t, res.Commit, landed.ID)
	require.Equal(t, []string{before}, landed.Parents, "one commit on top of the expected head")
	requireEverythingWritten(t, r)
}

const rateLimitedFiles = 5

// rateLimitedChanges adds files, changes one, deletes one: every kind of
// change that a refused write could lose.
func rateLimitedChanges() []gitfile.Change {
	changes := []gitfile.Change{Update("changed.yaml", "v: 1\n", "v: 2\n"), Delete("deleted.yaml", "v: 1\n")}
	for i := range rateLimitedFiles {
		changes = append(changes, put(fmt.Sprintf("limited/file-%d.yaml", i), fmt.Sprintf("n: %d\n", i)))
	}
	return changes
}

func requireNothingWritten(t *testing.T, r Repo) {
	t.Helper()
	changed, _ := r.File(t, "main", "changed.yaml")
	require.Equal(t, "v: 1\n", changed, "the refused commit changed no file")
	_, ok := r.File(t, "main", "deleted.yaml")
	require.True(t, ok, "the refused commit deleted no file")
	for i := range rateLimitedFiles {
		_, ok := r.File(t, "main", fmt.Sprintf("limited/file-%d.yaml", i))
		require.False(t, ok, "the refused commit added no file")
	}
}

func requireEverythingWritten(t *testing.T, r Repo) {
	t.Helper()
	kept, _ := r.File(t, "main", "kept.yaml")
	require.Equal(t, "v: 1\n", kept, "an untouched file stays")
	changed, _ := r.File(t, "main", "changed.yaml")
	require.Equal(t, "v: 2\n", changed)
	_, ok := r.File(t, "main", "deleted.yaml")
	require.False(t, ok, "the deletion landed")
	for i := range rateLimitedFiles {
		content, ok := r.File(t, "main", fmt.Sprintf("limited/file-%d.yaml", i))
		require.True(t, ok, "file %d landed", i)
		require.Equal(t, fmt.Sprintf("n: %d\n", i), content)
	}
}
