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
