package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// minSecretLength keeps short values ("v1", "true", a user name that is
// also a GitTarget name) from matching by coincidence.
const minSecretLength = 8

// plaintextSecretLeaks reads every object (every blob of every commit, and
// the commits and trees too) of every repository below roots and reports
// each Secret value of the API server found in plaintext or base64. It runs
// after the suite, so it covers everything any test wrote.
func plaintextSecretLeaks(roots ...string) (leaks []string, scanned int, err error) {
	needles, err := secretNeedles()
	if err != nil {
		return nil, 0, err
	}
	repos, err := bareRepositories(roots...)
	if err != nil {
		return nil, 0, err
	}
	for _, repo := range repos {
		objects, err := exec.Command("git", "--git-dir", repo, "cat-file", "--batch-all-objects", "--batch").Output()
		if err != nil {
			return nil, 0, fmt.Errorf("reading the objects of %s: %w", repo, err)
		}
		for _, n := range needles {
			if bytes.Contains(objects, []byte(n.text)) {
				leaks = append(leaks, fmt.Sprintf("%s holds %s", repo, n.what))
			}
		}
	}
	return leaks, len(repos), nil
}

type needle struct{ text, what string }

// secretNeedles are the values of every Secret in the API server, as they
// are and base64-encoded, and the long lines of multi-line values (a PEM
// block, an age identity file).
func secretNeedles() ([]needle, error) {
	var secrets corev1.SecretList
	if err := env.kube.Client().List(context.Background(), &secrets); err != nil {
		return nil, fmt.Errorf("listing Secrets: %w", err)
	}
	var out []needle
	for _, s := range secrets.Items {
		for key, value := range s.Data {
			what := fmt.Sprintf("the value of %s/%s %q", s.Namespace, s.Name, key)
			if len(value) >= minSecretLength {
				out = append(out, needle{string(value), what}, needle{base64.StdEncoding.EncodeToString(value), what + " (base64)"})
			}
			for _, line := range strings.Split(string(value), "\n") {
				if line = strings.TrimSpace(line); len(line) >= 32 && !strings.HasPrefix(line, "#") && line != string(value) {
					out = append(out, needle{line, what + " (a line of it)"})
				}
			}
		}
	}
	return out, nil
}

// bareRepositories finds every bare Git repository below roots.
func bareRepositories(roots ...string) ([]string, error) {
	var repos []string
	for _, root := range roots {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return err
			}
			if isBareRepository(path) {
				repos = append(repos, path)
				return filepath.SkipDir
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("looking for repositories below %s: %w", root, err)
		}
	}
	return repos, nil
}

func isBareRepository(dir string) bool {
	for _, name := range []string{"HEAD", "objects", "refs"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return false
		}
	}
	return filepath.Base(dir) != ".git"
}
