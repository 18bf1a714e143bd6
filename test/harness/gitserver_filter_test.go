package harness

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
)

// The server allows partial clone unless DenyFilters: a clone with
// --filter=blob:none over HTTP and SSH then lacks every blob of the
// branch; with filters denied git says the server ignored the filter and
// the clone has them all.
func TestGitServerAllowsFiltersUnlessDenied(t *testing.T) {
	t.Parallel()
	keyPEM, publicKey := generateTestSSHKey(t)
	for _, deny := range []bool{false, true} {
		server := startTestGitServer(t, GitServerOptions{AuthorizedKeys: []ssh.PublicKey{publicKey}, DenyFilters: deny})
		_, err := server.CreateRepoWithCommit("repo", map[string]string{"a.txt": "a\n", "dir/b.txt": "b\n"})
		require.NoError(t, err)
		files, err := server.Git("repo", "ls-tree", "-r", "--name-only", "main")
		require.NoError(t, err)
		blobs := len(strings.Split(files, "\n"))
		client := newGitCLIClient(t, server, keyPEM)
		for name, remoteURL := range map[string]string{"http": server.HTTPURL("repo"), "ssh": server.SSHURL("repo")} {
			dir := filepath.Join(t.TempDir(), "clone")
			out := client.mustRun(t, "", "clone", "--no-checkout", "--filter=blob:none", remoteURL, dir)
			listed := client.mustRun(t, dir, "rev-list", "--objects", "--missing=print", "HEAD")
			missing := strings.Count("\n"+listed, "\n?")
			if deny {
				require.Contains(t, out, "filtering not recognized by server", name)
				require.Zero(t, missing, name)
			} else {
				require.NotContains(t, out, "filtering not recognized", name)
				require.Equal(t, blobs, missing, "%s: every blob left on the server", name)
			}
		}
	}
}
