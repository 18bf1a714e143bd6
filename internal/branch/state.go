package branch

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"golang.org/x/sync/errgroup"

	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/internal/manifest"
)

// branchState is what a worker knows of its branch without a clone: the head
// it last saw and, per GitTarget, an index of the target's subtree at that
// head. Blob contents are cached by id, so after a conflict only what changed
// is read again.
type branchState struct {
	forge  forges.Forge
	branch string
	head   string
	// base, while the branch does not exist, is the head of the repository's
	// default branch: the first commit starts the branch there, so it shares
	// history with the default branch. "" starts an orphan history.
	base    string
	known   bool
	targets map[TargetKey]*targetState
	blobs   *blobCache
	// seeds are the contents the worker is about to write, by blob id, for
	// the next index load only (expect): the ones Git has join the blob
	// cache, the rest are dropped with the load, so a cold start into an
	// empty repository keeps no second copy of every file it writes.
	seeds map[string][]byte
}

type targetState struct {
	target Target
	index  *manifest.Index
	// at is the tip the index describes; a different tip means reload.
	at string
}

func newBranchState(forge forges.Forge, branch string) *branchState {
	return &branchState{forge: forge, branch: branch, targets: map[TargetKey]*targetState{}, blobs: newBlobCache(64 << 20)}
}

func (s *branchState) setTarget(t Target) {
	if ts, ok := s.targets[t.Key]; ok && ts.target.Path == t.Path {
		ts.target = t // the index still holds; the encryptor may be new
		return
	}
	s.targets[t.Key] = &targetState{target: t}
}

func (s *branchState) removeTarget(t TargetKey) { delete(s.targets, t) }

// refresh forgets the head, so the next load reads it again.
func (s *branchState) refresh(ctx context.Context) error {
	s.known = false
	return s.readHead(ctx)
}

func (s *branchState) readHead(ctx context.Context) error {
	head, err := s.forge.Head(ctx, s.branch)
	base := ""
	switch {
	case err == nil:
	case errors.Is(err, forges.ErrNotFound):
		// The first commit creates the branch, from the default branch.
		if base, err = s.readBase(ctx); err != nil {
			return err
		}
	case errors.Is(err, forges.ErrEmptyRepository):
		// The first commit creates the branch and the repository's history.
	default:
		return fmt.Errorf("reading the head of branch %s: %w", s.branch, err)
	}
	s.head, s.base, s.known = head, base, true
	return nil
}

// readBase is the head of the repository's default branch, for a branch
// that does not exist yet to start from: a user mirroring into a new branch
// expects it to share history with the default branch, so it can be
// compared and merged. It is "" (an orphan history) when the forge cannot
// tell its default branch, the repository has none yet, or the default
// branch is this branch, which is then missing only because the repository
// is empty.
func (s *branchState) readBase(ctx context.Context) (string, error) {
	brancher, ok := s.forge.(forges.DefaultBrancher)
	if !ok {
		return "", nil
	}
	name, err := brancher.DefaultBranch(ctx)
	if err != nil {
		return "", fmt.Errorf("reading the default branch to start branch %s from: %w", s.branch, err)
	}
	if name == "" || name == s.branch {
		return "", nil
	}
	head, err := s.forge.Head(ctx, name)
	switch {
	case err == nil:
		return head, nil
	case errors.Is(err, forges.ErrNotFound), errors.Is(err, forges.ErrEmptyRepository):
		return "", nil // a default branch named but not there has nothing to share
	}
	return "", fmt.Errorf("reading the head of default branch %s to start branch %s from: %w", name, s.branch, err)
}

// tip is the commit the indexes describe: the head, or while the branch
// does not exist the commit it will start from ("" for none).
func (s *branchState) tip() string {
	if s.head == "" {
		return s.base
	}
	return s.head
}

// loaded reports whether the target's index describes the tip as last
// read, so using it needs no reads.
func (s *branchState) loaded(key TargetKey) bool {
	ts, ok := s.targets[key]
	return ok && s.known && ts.index != nil && ts.at == s.tip()
}

// expect seeds the next index load with file contents the worker is about
// to write, under the blob ids Git gives them. After a restart nearly every
// mirrored file is one of these, unchanged, so loading an index reads only
// the files that differ rather than every file, one request each.
func (s *branchState) expect(contents [][]byte) {
	s.seeds = make(map[string][]byte, len(contents))
	for _, c := range contents {
		s.seeds[plumbing.ComputeHash(plumbing.BlobObject, c).String()] = c
	}
}

// cached is a blob's content from the seeds or the blob cache; a seed Git
// has joins the cache, as the index now holds it.
func (s *branchState) cached(id string) ([]byte, bool) {
	if content, ok := s.seeds[id]; ok {
		s.blobs.put(id, content)
		return content, true
	}
	return s.blobs.get(id)
}

// ensureLoaded makes the target's index describe the current tip. On a
// branch that does not exist yet that is its base: files the default branch
// already has under the target's path are the starting state, existing
// documents the planner edits in place rather than writes again.
func (s *branchState) ensureLoaded(ctx context.Context, key TargetKey) error {
	ts, ok := s.targets[key]
	if !ok {
		return fmt.Errorf("GitTarget %s is not registered with the branch worker", key)
	}
	// The seeds serve this load only.
	defer func() { s.seeds = nil }()
	if !s.known {
		if err := s.readHead(ctx); err != nil {
			return err
		}
	}
	if ts.index != nil && ts.at == s.tip() {
		return nil
	}
	files, err := s.readSubtree(ctx, ts.target.Path)
	if err != nil {
		return err
	}
	ix, err := manifest.NewIndex(ts.target.Path, files)
	if err != nil {
		return fmt.Errorf("indexing %s at %s: %w", ts.target.Path, s.tip(), err)
	}
	ts.index, ts.at = ix, s.tip()
	s.releaseBlobs()
	return nil
}

// releaseBlobs tells a forge that keeps the blobs it fetched or pushed in
// memory (forges.BlobReleaser) that the worker holds the files now, in its
// indexes and blob cache: otherwise every mirrored file stayed in memory
// twice, once here and once in the forge's object store.
func (s *branchState) releaseBlobs() {
	if releaser, ok := s.forge.(forges.BlobReleaser); ok {
		releaser.ReleaseBlobs()
	}
}

// readSubtree reads the files under root at the tip. Only YAML is read:
// other files only need to be known to exist.
func (s *branchState) readSubtree(ctx context.Context, root string) (map[string][]byte, error) {
	files := map[string][]byte{}
	tip := s.tip()
	if tip == "" {
		return files, nil
	}
	entries, err := s.forge.Tree(ctx, tip, root)
	if err != nil {
		return nil, fmt.Errorf("listing %s at %s: %w", root, tip, err)
	}
	var missing []forges.TreeEntry
	for _, e := range entries {
		if !isYAML(e.Path) {
			files[e.Path] = nil
			continue
		}
		if content, ok := s.cached(e.BlobID); ok {
			files[e.Path] = content
			continue
		}
		missing = append(missing, e)
	}
	contents, err := readBlobs(ctx, s.forge, missing)
	if err != nil {
		return nil, err
	}
	for i, e := range missing {
		s.blobs.put(e.BlobID, contents[i])
		files[e.Path] = contents[i]
	}
	return files, nil
}

// readBlobs reads the blobs of entries, as many at a time as the forge
// takes (forges.ReadConcurrency); contents[i] is entries[i]'s. A restart
// reads every file that changed while the operator was down, and one
// round trip after another is most of its time on an API forge.
func readBlobs(ctx context.Context, reader forges.Reader, entries []forges.TreeEntry) ([][]byte, error) {
	contents := make([][]byte, len(entries))
	group, ctx := errgroup.WithContext(ctx)
	group.SetLimit(forges.ReadConcurrency(reader))
	for i, e := range entries {
		group.Go(func() error {
			content, err := reader.Blob(ctx, e.BlobID)
			if err != nil {
				return fmt.Errorf("reading %s: %w", e.Path, err)
			}
			contents[i] = content
			return nil
		})
	}
	return contents, group.Wait()
}

// committed moves the state to a commit the worker made: the changed target
// applies its own changes, and every other index that described the old tip
// still describes the new one, since the commit touched only this target.
// A branch the commit created now exists, so it has no base any more.
func (s *branchState) committed(res forges.CommitResult, plan *windowPlan) {
	old := s.tip()
	s.head, s.base = res.Commit, ""
	for _, ts := range s.targets {
		if ts.at != old || ts.index == nil {
			continue
		}
		if ts.target.Key == plan.target {
			if err := ts.index.Apply(plan.indexChanges); err != nil {
				ts.index = nil // rebuilt from the forge on next use
				continue
			}
		} else if overlaps(ts.target.Path, plan.touched) {
			ts.index = nil
			continue
		}
		ts.at = s.head
	}
	for p, id := range res.Blobs {
		if c, ok := plan.contents[p]; ok {
			s.blobs.put(id, c)
		}
	}
}

func isYAML(p string) bool {
	return strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")
}

// overlaps reports whether any touched path lies under root. GitTargets on
// one branch never overlap (the controller refuses it); this only guards an
// index against a commit made for another target.
func overlaps(root string, touched []string) bool {
	if root == "." || root == "" {
		return len(touched) > 0
	}
	for _, p := range touched {
		if p == root || strings.HasPrefix(p, root+"/") {
			return true
		}
	}
	return false
}
