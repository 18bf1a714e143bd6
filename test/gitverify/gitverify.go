// Package gitverify checks commit signatures the way a user does: with the
// git CLI's verify-commit, gpg.format=ssh and an allowed_signers file. Tests
// hand it a commit object as the repository stores it, so whatever wrote the
// commit (go-git, a forge, a simulator) is judged by Git itself.
//
// It imports nothing from Kubernetes or the forges, so the forge contract
// suite can use it.
package gitverify

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// AllowedSigners is an allowed_signers file that trusts publicKey
// ("ssh-ed25519 AAAA...") to sign Git commits for principal, as ssh-keygen(1)
// documents the format under ALLOWED SIGNERS.
func AllowedSigners(principal, publicKey string) string {
	return fmt.Sprintf("%s namespaces=\"git\" %s\n", principal, strings.TrimSpace(publicKey))
}

// VerifyCommit stores raw, a commit object as `git cat-file commit` prints
// it, in a scratch repository and runs
//
//	git -c gpg.format=ssh -c gpg.ssh.allowedSignersFile=<file> verify-commit <id>
//
// It returns git's report ("Good "git" signature for ...") and an error
// when git refuses the signature. id is the object id git computed, which
// callers compare with the id the forge reported to prove raw is that
// commit.
func VerifyCommit(t testing.TB, raw []byte, allowedSigners string) (id, report string, err error) {
	t.Helper()
	dir := t.TempDir()
	signersFile := filepath.Join(dir, "allowed_signers")
	if err := os.WriteFile(signersFile, []byte(allowedSigners), 0o600); err != nil {
		t.Fatalf("writing allowed_signers: %v", err)
	}
	repo := filepath.Join(dir, "repo.git")
	if out, err := git(nil, "init", "--quiet", "--bare", repo); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	// The commit's tree and parents need not be present: verify-commit reads
	// the commit object alone.
	out, err := git(raw, "-C", repo, "hash-object", "-t", "commit", "-w", "--stdin")
	if err != nil {
		t.Fatalf("git hash-object of the commit: %v: %s", err, out)
	}
	id = strings.TrimSpace(out)
	report, err = git(nil, "-C", repo, "-c", "gpg.format=ssh", "-c", "gpg.ssh.allowedSignersFile="+signersFile,
		"verify-commit", id)
	return id, strings.TrimSpace(report), err
}

// CatCommit returns commit id of the repository at gitDir as Git stores
// it (`git cat-file commit`), byte for byte, for VerifyCommit.
func CatCommit(t testing.TB, gitDir, id string) []byte {
	t.Helper()
	cmd := exec.Command("git", "--git-dir="+gitDir, "cat-file", "commit", id)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("git cat-file commit %s in %s: %v: %s", id, gitDir, err, stderr.String())
	}
	return raw
}

// WithMessage returns the commit object raw with its message replaced and
// every header, the gpgsig signature included, unchanged: a forgery whose
// signature no longer covers what it says.
func WithMessage(t testing.TB, raw []byte, message string) []byte {
	t.Helper()
	headers, _, found := bytes.Cut(raw, []byte("\n\n"))
	if !found {
		t.Fatalf("the commit object has no message separator:\n%s", raw)
	}
	return append(append(headers, "\n\n"...), message...)
}

// git runs the git CLI with stdin, isolated from the user's configuration,
// and returns its combined output.
func git(stdin []byte, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}
