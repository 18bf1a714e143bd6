package harness

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
)

// Versions of the components built by test/tools/build.sh. They must match
// the versions pinned there.
const (
	KubeAPIServerVersion = "v1.37.2"
	EtcdVersion          = "v3.7.3"
	GiteaVersion         = "v1.27.3"
	// SopsVersion is the sops CLI, kept equal to the sops library the
	// operator links.
	SopsVersion = "v3.13.3"
)

var buildMu sync.Mutex

// ToolsCacheDir is where built binaries are cached, one directory per
// component and version: $GITOPS_REVERSER_TOOLS_CACHE, else
// $XDG_CACHE_HOME/gitops-reverser/tools, else ~/.cache/gitops-reverser/tools.
func ToolsCacheDir() (string, error) {
	if dir := os.Getenv("GITOPS_REVERSER_TOOLS_CACHE"); dir != "" {
		return dir, nil
	}
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("locating the tools cache: %w", err)
		}
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "gitops-reverser", "tools"), nil
}

// BinaryPath returns the path of a built component binary (kube-apiserver,
// etcd, gitea or sops), building it with test/tools/build.sh when the cache does
// not hold it yet. The directory holding the binary also holds any runtime
// files built with it (Gitea's static/ tree).
func BinaryPath(name, version string) (string, error) {
	cache, err := ToolsCacheDir()
	if err != nil {
		return "", err
	}
	path := filepath.Join(cache, name+"-"+version, name)
	if isBuilt(path, name) {
		return path, nil
	}
	buildMu.Lock()
	defer buildMu.Unlock()
	script := filepath.Join(RepoRoot(), "test", "tools", "build.sh")
	cmd := exec.Command("bash", script, name)
	cmd.Env = append(os.Environ(), "GITOPS_REVERSER_TOOLS_CACHE="+cache)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("building %s %s with %s: %w\n%s", name, version, script, err, out)
	}
	if !isExecutable(path) {
		return "", fmt.Errorf("%s built but %s is missing", name, path)
	}
	return path, nil
}

// BinaryCached reports whether BinaryPath finds name at version in the cache,
// so it will not have to build it.
func BinaryCached(name, version string) bool {
	cache, err := ToolsCacheDir()
	return err == nil && isBuilt(filepath.Join(cache, name+"-"+version, name), name)
}

// isBuilt is a cached binary at path, with the runtime files it needs.
func isBuilt(path, name string) bool {
	return isExecutable(path) && (name != "gitea" || isDir(filepath.Join(filepath.Dir(path), "static", "options")))
}

// RepoRoot is the root of this repository, found from this source file.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// LookSystemBinary finds a binary the operating system provides (git,
// redis-server), with a message that says how to install it when missing.
func LookSystemBinary(name, debianPackage string) (string, error) {
	path, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%s not found on PATH (install the Debian package %q; .ci/run does): %w",
			name, debianPackage, err)
	}
	return path, nil
}

func isExecutable(path string) bool {
	info, err := os.Stat(path)
	return err == nil && !info.IsDir() && info.Mode()&0o111 != 0
}

func isDir(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.IsDir()
}

func trimNewline(b []byte) string { return strings.TrimRight(string(b), "\r\n") }
