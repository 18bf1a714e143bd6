package gitfile

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBlobID compares with ids git itself prints (git hash-object, and
// git hash-object --object-format=sha256 for the empty blob).
func TestBlobID(t *testing.T) {
	sha1Like, sha256Like := strings.Repeat("a", 40), strings.Repeat("a", 64)
	require.Equal(t, "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391", BlobID(nil, sha1Like))
	require.Equal(t, "ce013625030ba8dba906f756967f9e9ca394464a", BlobID([]byte("hello\n"), sha1Like))
	require.Equal(t, "ce013625030ba8dba906f756967f9e9ca394464a", BlobID([]byte("hello\n"), ""), "SHA-1 when nothing says otherwise")
	require.Equal(t, "473a0f4c3be8a93681a267e3b1e9a7dcda1185436fe141f7749120a303721813", BlobID(nil, sha256Like))
}
