// Package e2e runs the whole operator in process against a real
// kube-apiserver and a real Git remote, and asserts on what lands in Git.
package e2e

import (
	"fmt"
	"os"
	"testing"

	"github.com/configbutler/gitops-reverser/test/harness"
)

// env is shared by the package's tests: one control plane and one Git
// server; each test uses its own namespaces and repositories.
var env struct {
	kube *harness.Kube
	git  *harness.GitServer
}

const (
	gitUser     = "mirror"
	gitPassword = "s3cret-token"
)

func TestMain(m *testing.M) {
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	dir, err := os.MkdirTemp("", "e2e-git-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	env.git, err = harness.StartGitServer(dir, harness.GitServerOptions{HTTPUsername: gitUser, HTTPPassword: gitPassword})
	if err != nil {
		return 0, err
	}
	defer env.git.Stop()
	env.kube, err = harness.StartKube(harness.KubeOptions{})
	if err != nil {
		return 0, err
	}
	defer env.kube.Stop()
	defer func() {
		if giteaServer.g != nil {
			giteaServer.g.Stop()
		}
	}()
	return m.Run(), nil
}
