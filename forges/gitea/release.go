package gitea

import "github.com/configbutler/gitops-reverser/forges"

var _ forges.BlobReleaser = (*Client)(nil)

// ReleaseBlobs passes the worker's release on to the Pusher, which holds
// the blobs of the trees it fetched (forges.BlobReleaser).
func (c *Client) ReleaseBlobs() {
	if releaser, ok := c.pusher.(forges.BlobReleaser); ok {
		releaser.ReleaseBlobs()
	}
}
