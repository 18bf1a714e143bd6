package metrics

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOperationLabelsStayBounded(t *testing.T) {
	sha := "0123456789abcdef0123456789abcdef01234567"
	for path, want := range map[string]string{
		"/repos/o/r/git/trees":                           "POST /git/trees",
		"/repos/o/r/git/trees/" + sha:                    "POST /git/trees/{sha}",
		"/repos/o/r/git/refs/heads/feature/x":            "POST /git/refs/heads/{branch}",
		"/api/v1/repos/o/r/contents":                     "POST /contents",
		"/api/v1/repos/o/r/branches/main":                "POST /branches/{branch}",
		"/api/v4/projects/g%2Fr/repository/commits":      "POST /repository/commits",
		"/api/v4/projects/g%2Fr/repository/blobs/" + sha: "POST /repository/blobs/{sha}",
		"/repos/o/r": "POST /",
	} {
		require.Equal(t, want, Operation("POST", path), path)
	}
}
