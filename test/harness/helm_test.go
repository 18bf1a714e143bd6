package harness

import (
	"bytes"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHelmSaysItCompilesBeforeItDoes: the first `go tool helm` on a
// machine compiles for minutes in silence; the harness says so first, and
// what it returns is a Helm that runs.
func TestHelmSaysItCompilesBeforeItDoes(t *testing.T) {
	var notice bytes.Buffer
	path, err := compileHelm(&notice)
	require.NoError(t, err)
	require.Equal(t, HelmCompileNotice+"\n", notice.String())
	require.Contains(t, notice.String(), "11 minutes", "the notice says how long the first compile takes")

	out, err := exec.Command(path, "version", "--short").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Regexp(t, `^v3\.`, string(out))
}
