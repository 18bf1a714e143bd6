package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
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

// scanLogAndEvents fails when the log of the suite's operators (debug level
// included) or an Event of the API server holds a Secret value, as it is or
// base64-encoded.
func scanLogAndEvents() int {
	needles, err := secretNeedles()
	if err != nil {
		fmt.Fprintln(os.Stderr, "reading the Secret values to scan for:", err)
		return 1
	}
	events, err := allEvents()
	if err != nil {
		fmt.Fprintln(os.Stderr, "reading the Events to scan:", err)
		return 1
	}
	surfaces := map[string]string{"the operators' log": operatorLog.String(), "the Events": events}
	leaked := false
	for surface, text := range surfaces {
		for _, n := range needles {
			if strings.Contains(text, n.text) {
				fmt.Fprintf(os.Stderr, "SECRET VALUE IN %s: %s\n", strings.ToUpper(surface), n.what)
				leaked = true
			}
		}
	}
	if leaked {
		return 1
	}
	fmt.Printf("no Secret value in the operators' log (%d bytes) or the Events\n", len(surfaces["the operators' log"]))
	return 0
}

// allEvents is every Event of the API server (both Event APIs) as JSON.
func allEvents() (string, error) {
	var core corev1.EventList
	if err := env.kube.Client().List(context.Background(), &core); err != nil {
		return "", fmt.Errorf("listing core Events: %w", err)
	}
	var events eventsv1.EventList
	if err := env.kube.Client().List(context.Background(), &events); err != nil {
		return "", fmt.Errorf("listing events.k8s.io Events: %w", err)
	}
	out, err := json.Marshal([]any{core.Items, events.Items})
	if err != nil {
		return "", fmt.Errorf("encoding the Events: %w", err)
	}
	return string(out), nil
}
