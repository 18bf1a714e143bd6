package harness

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
)

// HelmCompileNotice is printed before Helm is compiled: the first build on
// a machine takes minutes and prints nothing, which reads as a hung test.
const HelmCompileNotice = "harness: compiling Helm (go tool -n helm, a Go tool of this module) unless Go's build cache " +
	"has it: the first time on a machine this takes about 11 minutes on two cores"

var helm struct {
	once sync.Once
	path string
	err  error
}

// HelmBinary returns the path of Helm, the module's tool, compiling it into
// Go's build cache the first time (once per process), so each render does
// not pay for `go tool`'s staleness check. It says so on stderr first.
func HelmBinary() (string, error) {
	helm.once.Do(func() { helm.path, helm.err = compileHelm(os.Stderr) })
	return helm.path, helm.err
}

// compileHelm writes HelmCompileNotice to notice, then builds Helm and
// returns its path.
func compileHelm(notice io.Writer) (string, error) {
	fmt.Fprintln(notice, HelmCompileNotice)
	cmd := exec.Command("go", "tool", "-n", "helm")
	cmd.Dir = RepoRoot()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("compiling helm (go tool -n helm): %w\n%s", err, out)
	}
	return strings.TrimSpace(string(out)), nil
}
