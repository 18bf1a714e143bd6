// Package forges is the write side of the operator: small interfaces over a
// Git host, one implementation package per forge (gogit, gitea, github,
// gitlab), and one error vocabulary every forge maps its failures onto.
//
// A branch worker commits through the forge's own API with a compare-and-swap
// on the branch head, so a change another writer made to the branch is never
// overwritten. Nothing here imports Kubernetes.
//
// Pull-request mode adds optional interfaces (pulls.go): a PullRequester
// keeps one pull request open from the operator's head branch into a
// protected base, and a BaseMerger brings the base into that head on the
// server, guarded by the head the caller read. Forges without pull
// requests (plain Git) implement neither. A pull request reports whether
// it merges (PullRequest.Mergeable), a FileLinker links a branch's files,
// and a commit may carry a merge parent (CommitRequest.MergeParent), which
// a MergeCommitter makes and any other forge refuses.
package forges
