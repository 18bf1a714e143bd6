package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// remote reads what the operator pushed, from outside the operator: the
// ground truth, independent of the operator's own idea of its commits. head
// names the commit main points at ("" while main does not exist); the
// other queries take such a head and paths relative to the GitTarget's
// spec.path.
type remote interface {
	head(ctx context.Context) (string, error)
	// files lists the paths under the target's path at head.
	files(ctx context.Context, head string) ([]string, error)
	// filesContaining counts the files under the target's path at head that
	// contain text.
	filesContaining(ctx context.Context, head, text string) (int, error)
	// show reads one file at head.
	show(ctx context.Context, head, file string) (string, error)
	// commitCount counts the commits on main; 0 while it does not exist.
	commitCount(ctx context.Context) (int, error)
}

// bareRemote reads a bare repository on disk with the git command line: the
// git server's repositories, and Gitea's, which keeps them as bare
// repositories under its data directory.
type bareRemote struct {
	gitDir string
	// path is the GitTarget's spec.path; file queries stay under it.
	path string
}

const branchRef = "refs/heads/main"

// git runs git against the bare repository. okCodes are exit codes that are
// answers rather than failures (git grep exits 1 when nothing matches).
func (r bareRemote) git(ctx context.Context, okCodes []int, args ...string) (string, int, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"--git-dir=" + r.gitDir}, args...)...)
	// Only PATH: no user or system config changes what git reports.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1", "HOME=/nonexistent", "LC_ALL=C"}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		for _, code := range okCodes {
			if exitErr.ExitCode() == code {
				return stdout.String(), code, nil
			}
		}
	}
	if err != nil {
		return "", 0, fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), 0, nil
}

// head is the commit main points at; "" while the branch does not exist.
func (r bareRemote) head(ctx context.Context) (string, error) {
	out, code, err := r.git(ctx, []int{1}, "rev-parse", "--verify", "--quiet", branchRef)
	if err != nil || code == 1 {
		return "", err
	}
	return strings.TrimSpace(out), nil
}

// files lists the paths under the target's path at commit, relative to it.
func (r bareRemote) files(ctx context.Context, commit string) ([]string, error) {
	out, _, err := r.git(ctx, nil, "ls-tree", "-r", "--name-only", commit, "--", r.path)
	if err != nil {
		return nil, err
	}
	lines := strings.Fields(out)
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, r.path+"/")
	}
	return lines, nil
}

// filesContaining counts the files under the target's path at commit that
// contain text.
func (r bareRemote) filesContaining(ctx context.Context, commit, text string) (int, error) {
	out, code, err := r.git(ctx, []int{1}, "grep", "--count", "--fixed-strings", text, commit, "--", r.path)
	if err != nil || code == 1 {
		return 0, err
	}
	return strings.Count(out, "\n"), nil
}

// show reads one file (relative to the target's path) at commit.
func (r bareRemote) show(ctx context.Context, commit, file string) (string, error) {
	out, _, err := r.git(ctx, nil, "show", commit+":"+r.path+"/"+file)
	return out, err
}

// commitCount counts the commits on main; 0 while it does not exist.
func (r bareRemote) commitCount(ctx context.Context) (int, error) {
	head, err := r.head(ctx)
	if err != nil || head == "" {
		return 0, err
	}
	out, _, err := r.git(ctx, nil, "rev-list", "--count", head)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		return 0, fmt.Errorf("parsing the commit count %q: %w", out, err)
	}
	return n, nil
}

// pollHeads calls check with every new head of main, polling every interval,
// until check says done; it returns when that head was seen. It fails when
// timeout passes or the operator exits.
func pollHeads(ctx context.Context, r remote, op *operatorRun, interval, timeout time.Duration,
	check func(ctx context.Context, head string) (bool, error)) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		head, err := r.head(ctx)
		if err != nil {
			return time.Time{}, err
		}
		seen := time.Now()
		if head != "" && head != last {
			last = head
			done, err := check(ctx, head)
			if err != nil {
				return time.Time{}, err
			}
			if done {
				return seen, nil
			}
		}
		if err := op.exited(); err != nil {
			return time.Time{}, err
		}
		if seen.After(deadline) {
			return time.Time{}, fmt.Errorf("not reached within %s (last head %q; operator log %s)", timeout, last, op.logPath)
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(interval):
		}
	}
}

// lastAuthor is "name <email>" of the last commit on main that touched
// file (below the remote's path).
func (r bareRemote) lastAuthor(ctx context.Context, file string) (string, error) {
	out, _, err := r.git(ctx, nil, "log", "-1", "--format=%an <%ae>", branchRef, "--", r.path+"/"+file)
	return strings.TrimSpace(out), err
}
