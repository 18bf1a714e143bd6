// Package gitea is the forge that commits through Gitea's HTTP API (1.27),
// without a clone.
//
// # Reads
//
// Head is GET branches/{b}, which matches the branch name exactly (GET
// git/refs/heads/{b} matches by prefix, so "main" would also find
// "main-old"). An empty repository has no branches; Gitea says so only in
// the repository's "empty" flag, which Head reads after a 404. Tree reads
// git/trees/{commit}?recursive=1 page by page (Gitea pages recursive trees,
// at most 1000 entries a page, directories included) and keeps the files
// below the prefix. Blob reads git/blobs/{id}. Nothing is cached: blobs are
// content-addressed and the branch worker caches them by id.
//
// # Commits through a push
//
// With Options.Pusher (the git forge on the repository's smart-HTTP URL,
// the token as the basic-auth password: how the operator configures it)
// every commit is a git push, Head is an ls-remote and Tree a depth-1
// fetch of the commit, whose files Blob then reads without a request (and
// the next push builds on). A push was faster than ChangeFiles at every
// size measured, and needs no scratch branch: receive-pack moves the
// branch only from the expected head, which is the compare-and-swap
// itself. The probe, the default branch and blobs of no fetched commit
// stay on the API. A server that refuses git over HTTP (403 with
// DISABLE_HTTP_GIT, or 401) switches the client to the API path below
// for an hour, then it tries again. After the first push into an empty repository the client waits
// (at most 30 s) for Gitea to clear the repository's "empty" flag, which
// it does from a queue; until then its API shows no files.
//
// # Commits through the API and the compare-and-swap on the head
//
// ChangeFiles (POST contents) writes many files in one commit with author,
// committer and dates, but takes no expected head: it commits on top of
// whatever the branch points at when the request arrives. Its per-file
// "sha" only guards the files the request names, so a concurrent commit
// that changed OTHER files would interleave: our commit would land on top
// of it. Git would not mind, but the product's guarantee is on the head:
// a commit is made on exactly the head the caller planned from, or not at
// all. (Without a sha Gitea even overwrites an update unconditionally.)
// So this forge runs the strict mode:
//
//  1. decide create, update or delete from each change's base blob (the
//     blob the caller knows the path holds at the expected head), and send
//     every update and delete with that sha, which Gitea checks: no tree
//     is read;
//  2. ChangeFiles with branch = the target and new_branch = a scratch
//     branch: the commit lands on the scratch branch only, and its parent
//     must be the expected head (Gitea bases it on the target's current
//     head, which is checked in the response);
//  3. PUT branches/{target} with old_commit_id = the expected head, a
//     fast-forward that Gitea refuses with 422 "branch commit does not
//     match" when the branch moved, and backs with git's
//     --force-with-lease;
//  4. delete the scratch branch, whatever happened.
//
// A chain of commits (CommitChain) commits the first as in 2, each later
// one with ChangeFiles on the scratch branch itself (its changes' base
// blobs are the blob ids the commit before wrote, which the caller
// computed, not read), and moves the target once, as in 3, to the last:
// N+2 requests for N commits. With a Pusher a chain is one push.
//
// That is three requests per commit, against two for the unguarded write; Gitea's own push hooks dominate the latency
// either way. Side effect: webhooks and Actions that listen to every branch
// see the scratch branch (named gitops-reverser-cas-<unix seconds>-<random>)
// appear and disappear. If its deletion fails (a connection cut, a killed
// process) the branch is left behind; a later commit deletes scratch
// branches older than an hour (at most once an hour per client; see
// scratch.go). force_push is never
// used: it discards concurrent updates.
//
// A new branch (no expected head) is made from a scratch branch created at
// BaseHead, with new_branch = the target on the (last) commit, which Gitea
// refuses with 422 "branch already exists" if the target appeared
// meanwhile. The first commit of an empty repository is ChangeFiles with a
// base branch that does not exist, which Gitea allows only while the
// repository is empty; Gitea cannot make an orphan branch in a repository
// that has commits. The rest of a chain follows on that first commit.
//
// Blob ids of the written files are computed locally (the Git blob hash of
// the content) rather than read back: that costs no request. It assumes
// Gitea stores content as sent, which holds unless the repository routes
// paths to LFS with .gitattributes and the server runs LFS.
//
// The API offers no way to pass a commit signature, so requests with a
// Signer are refused; Gitea signs API commits itself when its instance has
// a signing key.
//
// # Errors
//
// Gitea's statuses map onto the forges vocabulary, the *APIError kept
// wrapped: 401 unauthorized; 403 forbidden, except a lost ref lock ("cannot
// lock ref", "push is rejected" for a stale lease), which is a conflict;
// 404 not found (400 for a missing tree or blob object, a Gitea quirk);
// 409 and the 422s that mean something moved ("sha does not match",
// "branch commit does not match", "already exists") conflict; 413 too
// large; 429 rate limited with Retry-After; 5xx transient, except a push
// that lost a race (PushOutOfDate, "non-fast-forward"), a conflict.
//
// The client calls the API with net/http rather than the Gitea SDK: the
// SDK takes its context per client rather than per call, asks the server
// for its version on construction, and drops the response bodies of
// UpdateRepoBranchRef and DeleteRepoBranch, which tell a lost race from a
// permission problem.
package gitea
