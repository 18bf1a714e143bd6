package github_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/forges/forgetest"
	"github.com/configbutler/gitops-reverser/gitfile"
	simgithub "github.com/configbutler/gitops-reverser/test/sim/github"
)

var (
	alice = forges.Signature{Name: "Alice", Email: "alice@example.com", When: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)}
	bot   = forges.Signature{Name: "GitOps Reverser", Email: "noreply@configbutler.ai", When: time.Date(2026, 3, 4, 5, 6, 9, 0, time.UTC)}
)

// record runs fn and returns the requests it made, as "METHOD path".
func record(t *testing.T, sim *simgithub.Server, fn func()) []string {
	t.Helper()
	before := len(sim.Requests())
	fn()
	var made []string
	for _, r := range sim.Requests()[before:] {
		// "/repos/{owner}/{repo}/git/trees" → "git/trees"
		segments := strings.SplitN(r.Path, "/", 5)
		made = append(made, r.Method+" "+segments[len(segments)-1])
	}
	return made
}

func commitRequest(branch, expected string, changes ...gitfile.Change) forges.CommitRequest {
	return forges.CommitRequest{Branch: branch, ExpectedHead: expected, Message: "test\n", Author: alice, Committer: bot, Changes: changes}
}

func yamlFiles(n int, prefix string) []gitfile.Change {
	changes := make([]gitfile.Change, n)
	for i := range changes {
		changes[i] = gitfile.Change{Path: fmt.Sprintf("%s/file-%03d.yaml", prefix, i), Content: fmt.Appendf(nil, "n: %d\n", i)}
	}
	return changes
}

func TestACommitIsThreeRequestsWhateverTheNumberOfFiles(t *testing.T) {
	sim := startSim(t)
	repo, client := tokenRepo(t, sim, map[string]string{"old.yaml": "old: true\n"})
	ctx := context.Background()
	head := mainHead(t, client)
	_, err := client.Tree(ctx, head, "")
	require.NoError(t, err, "reading the tree teaches the client the head's tree")

	threeRequests := []string{"POST git/trees", "POST git/commits", "PATCH git/refs/heads/main"}
	var first forges.CommitResult
	made := record(t, sim, func() {
		first, err = client.Commit(ctx, commitRequest("main", head, yamlFiles(1, "one")...))
		require.NoError(t, err)
	})
	require.Equal(t, threeRequests, made, "one file")

	changes := append(yamlFiles(200, "many"), forgetest.Delete("old.yaml", "old: true\n"),
		gitfile.Change{Path: "never-there.yaml", Delete: true})
	made = record(t, sim, func() {
		_, err = client.Commit(ctx, commitRequest("main", first.Commit, changes...))
		require.NoError(t, err)
	})
	require.Equal(t, threeRequests, made, "200 files and a deletion, on the client's own last commit; "+
		"the deletion of a path without a base blob is left out, not refused")
	content, ok := sim.File(owner, repo, "main", "many/file-199.yaml")
	require.True(t, ok)
	require.Equal(t, "n: 199\n", content)
	_, ok = sim.File(owner, repo, "main", "old.yaml")
	require.False(t, ok)
}

func TestACommitOnAHeadOnlyReadAsARefFetchesItsTreeOnce(t *testing.T) {
	sim := startSim(t)
	_, client := tokenRepo(t, sim, map[string]string{"a.yaml": "a: 1\n"})
	head := mainHead(t, client)
	made := record(t, sim, func() {
		_, err := client.Commit(context.Background(), commitRequest("main", head, yamlFiles(3, "x")...))
		require.NoError(t, err)
	})
	require.Equal(t, []string{"GET git/commits/" + head, "POST git/trees", "POST git/commits", "PATCH git/refs/heads/main"}, made)
}

func TestBinaryAndLargeFilesAreUploadedAsBlobs(t *testing.T) {
	sim := startSim(t)
	_, client := tokenRepo(t, sim, map[string]string{"a.yaml": "a: 1\n"})
	ctx := context.Background()
	head := mainHead(t, client)
	binary := []byte{0x00, 0xff, 0xfe, 'x'}
	large := []byte(strings.Repeat("k: v\n", (1<<20)/5+1))
	var result forges.CommitResult
	var err error
	made := record(t, sim, func() {
		result, err = client.Commit(ctx, commitRequest("main", head,
			gitfile.Change{Path: "bin/data", Content: binary},
			gitfile.Change{Path: "big.yaml", Content: large},
			gitfile.Change{Path: "small.yaml", Content: []byte("s: 1\n")}))
		require.NoError(t, err)
	})
	require.Equal(t, []string{"GET git/commits/" + head, "POST git/blobs", "POST git/blobs",
		"POST git/trees", "POST git/commits", "PATCH git/refs/heads/main"}, made)

	entries, err := client.Tree(ctx, result.Commit, "")
	require.NoError(t, err)
	for _, entry := range entries {
		if want, ok := result.Blobs[entry.Path]; ok {
			require.Equal(t, want, entry.BlobID, "the blob id reported for %s is the one GitHub stored", entry.Path)
		}
	}
	require.Len(t, result.Blobs, 3)
	read, err := client.Blob(ctx, result.Blobs["bin/data"])
	require.NoError(t, err)
	require.Equal(t, binary, read)
}

func TestEmptyRepositoryStartsWithTheContentsAPI(t *testing.T) {
	sim := startSim(t)
	ctx := context.Background()

	single := repoName(t, "single")
	require.NoError(t, sim.CreateRepo(owner, single, nil))
	client := newTokenClient(t, sim, single, goodToken)
	made := record(t, sim, func() {
		_, err := client.Commit(ctx, commitRequest("main", "", gitfile.Change{Path: "a b/first.yaml", Content: []byte("first: 1\n")}))
		require.NoError(t, err)
	})
	require.Equal(t, []string{"POST git/trees", "PUT contents/a b/first.yaml"}, made, "a single file is one contents PUT")
	head, err := sim.HeadCommit(owner, single, "main")
	require.NoError(t, err)
	require.Equal(t, alice.Name, head.Author.Name)
	require.True(t, bot.When.Equal(head.Committer.When), "the contents API keeps the dates")

	several := repoName(t, "several")
	require.NoError(t, sim.CreateRepo(owner, several, nil))
	client = newTokenClient(t, sim, several, goodToken)
	var result forges.CommitResult
	made = record(t, sim, func() {
		result, err = client.Commit(ctx, commitRequest("main", "", yamlFiles(5, "dir")...))
		require.NoError(t, err)
	})
	require.Equal(t, []string{"POST git/trees", "PUT contents/dir/file-000.yaml",
		"POST git/trees", "POST git/commits", "PATCH git/refs/heads/main"}, made)
	head, err = sim.HeadCommit(owner, several, "main")
	require.NoError(t, err)
	require.Equal(t, result.Commit, head.SHA)
	require.Len(t, head.Parents, 1, "the rest lands on top of the first file's commit")
	require.Len(t, result.Blobs, 5)
	for i := range 5 {
		content, ok := sim.File(owner, several, "main", fmt.Sprintf("dir/file-%03d.yaml", i))
		require.True(t, ok)
		require.Equal(t, fmt.Sprintf("n: %d\n", i), content)
	}
}

// recordingSigner signs with a fixed armor and keeps what it was asked to
// sign.
type recordingSigner struct{ payload []byte }

func (s *recordingSigner) Sign(payload []byte) ([]byte, error) {
	s.payload = payload
	return []byte("-----BEGIN SSH SIGNATURE-----\nU1NIU0lH\n-----END SSH SIGNATURE-----\n"), nil
}

func TestSignedCommitSignsTheCommitGitHubStores(t *testing.T) {
	sim := startSim(t)
	repo, client := tokenRepo(t, sim, map[string]string{"a.yaml": "a: 1\n"})
	ctx := context.Background()
	head := mainHead(t, client)
	signer := &recordingSigner{}
	req := commitRequest("main", head, gitfile.Change{Path: "b.yaml", Content: []byte("b: 1\n")})
	req.Signer = signer
	_, err := client.Commit(ctx, req)
	require.NoError(t, err)
	stored, err := sim.HeadCommit(owner, repo, "main")
	require.NoError(t, err)
	require.Equal(t, "-----BEGIN SSH SIGNATURE-----\nU1NIU0lH\n-----END SSH SIGNATURE-----\n", stored.Signature)
	require.Equal(t, stored.SignedPayload, string(signer.payload), "the signature covers exactly the stored commit")
}

func TestTruncatedTreesAreReadOneSubtreeAtATime(t *testing.T) {
	sim := startSim(t, simgithub.WithTreeEntryLimit(4))
	seed := map[string]string{"top.yaml": "t\n"}
	for i := range 6 {
		seed[fmt.Sprintf("apps/team-%d/app.yaml", i)] = fmt.Sprintf("team: %d\n", i)
		seed[fmt.Sprintf("infra/%d.yaml", i)] = "i\n"
	}
	_, client := tokenRepo(t, sim, seed)
	ctx := context.Background()
	head := mainHead(t, client)
	all, err := client.Tree(ctx, head, "")
	require.NoError(t, err)
	require.Len(t, all, len(seed))
	apps, err := client.Tree(ctx, head, "apps")
	require.NoError(t, err)
	require.Len(t, apps, 6)
	for _, entry := range apps {
		require.True(t, strings.HasPrefix(entry.Path, "apps/team-"), entry.Path)
	}
	none, err := client.Tree(ctx, head, "app")
	require.NoError(t, err)
	require.Empty(t, none, "a prefix is a directory, not a string prefix")
}

func TestCommitURLAndProbe(t *testing.T) {
	sim := startSim(t)
	repo, client := tokenRepo(t, sim, map[string]string{"a.yaml": "a: 1\n"})
	require.Equal(t, "https://github.com/"+owner+"/"+repo+"/commit/abc", client.CommitURL("abc"))
	require.NoError(t, client.Probe(context.Background()))
	require.ErrorIs(t, newTokenClient(t, sim, "missing", goodToken).Probe(context.Background()), forges.ErrNotFound)
	require.ErrorIs(t, newTokenClient(t, sim, repo, "ghp_wrong").Probe(context.Background()), forges.ErrUnauthorized)
}
