package forgeconn_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/forgeconn"
)

func TestRepositoryKeyTellsSpellingsOfOneRepositoryApart(t *testing.T) {
	const github = "github.com/org/repo"
	tests := []struct {
		name, url, want string
	}{
		{"https with .git", "https://github.com/org/repo.git", github},
		{"https without .git", "https://github.com/org/repo", github},
		{"trailing slash", "https://github.com/org/repo/", github},
		{".git and a trailing slash", "https://github.com/org/repo.git/", github},
		{"host in upper case", "https://GitHub.COM/org/repo", github},
		{"owner and repository in another case", "https://github.com/Org/Repo.git", github},
		{"http", "http://github.com/org/repo", github},
		{"https default port", "https://github.com:443/org/repo", github},
		{"http default port", "http://github.com:80/org/repo", github},
		{"credentials in the URL", "https://x-access-token:secret@github.com/org/repo.git", github},
		{"ssh://", "ssh://git@github.com/org/repo.git", github},
		{"ssh:// default port", "ssh://git@github.com:22/org/repo.git", github},
		{"scp-like", "git@github.com:org/repo.git", github},
		{"scp-like with a leading slash", "git@github.com:/org/repo", github},
		{"doubled and dot segments", "https://github.com/org//./repo", github},
		{"surrounding space", " https://github.com/org/repo ", github},
		{"another port is another server", "https://git.example.com:3000/org/repo", "git.example.com:3000/org/repo"},
		{"an ssh port is not the web port", "ssh://git@git.example.com:2222/org/repo.git", "git.example.com:2222/org/repo"},
		{"another repository", "https://github.com/org/other", "github.com/org/other"},
		{"a subgroup stays in the path", "https://gitlab.com/group/sub/repo.git", "gitlab.com/group/sub/repo"},
		{"a loopback server", "http://127.0.0.1:8080/mirror.git", "127.0.0.1:8080/mirror"},
		{"file keeps its case", "file:///srv/Git/Repo.git", "file:///srv/Git/Repo"},
		{"file with a trailing slash", "file:///srv/git/repo/", "file:///srv/git/repo"},
		{"not a URL keys as itself", "not a url", "not a url"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, forgeconn.RepositoryKey(tc.url))
		})
	}
}
