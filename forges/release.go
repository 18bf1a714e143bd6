package forges

// BlobReleaser is implemented by forges that keep the blobs they fetched
// in memory, to serve Blob without a request (the git forge, which cannot
// fetch a single blob). The branch worker calls ReleaseBlobs once its
// index holds the files, after reading a subtree and after each commit:
// from then on the forge need keep only what its next commit builds on.
// A Blob after it may cost a fetch.
type BlobReleaser interface {
	ReleaseBlobs()
}

// BlobHolder is implemented by forges that keep the blobs of a fetched
// snapshot in memory (the git forge, whose depth-1 fetch brings every blob
// of the tree). Before reading a tree the branch worker names the blobs
// it already holds, by id, with their contents: after a restart nearly
// every mirrored file is one it is about to write. A fetch while they are
// named keeps none of them (a delta in the pack built on one reads it from
// held), so the forge's store does not hold a second copy of every file
// even until ReleaseBlobs. HoldBlobs(nil) forgets them. held must answer
// only contents whose blob id is the id asked for.
type BlobHolder interface {
	HoldBlobs(held func(id string) ([]byte, bool))
}
