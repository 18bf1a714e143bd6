package branch

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/gitfile"
	"github.com/configbutler/gitops-reverser/internal/manifest"
)

// This file holds the index's pending files as the worker sees them. An
// index loads when the first window is committed; a replay larger than a
// window (--branch-buffer-max-size) delivers its other objects moments
// later, so their files, unchanged since the operator stopped, are neither
// read nor parsed at the load (readSubtree leaves them pending). Each
// window confirms the pending files that are its writes' renderings, by
// blob id, and any window but a replay's window of no-ops first reads and
// parses whatever is still pending: a plan that writes, a sweep and the
// acceptance gate (manifest.Index.Check, which refuses a person's file the
// operator cannot manage even when the window writes nothing) see the
// whole subtree, as they did before. Only a window of no-ops of a replay
// is planned with files unread: it writes nothing, and the replay's later
// windows confirm those files or its sweep reads them. A restart with
// nothing changed thus reads and parses no file, whatever the replay's
// windows.

// deferAll makes the files of pending (blob id by path) pending in ix.
func deferAll(ix *manifest.Index, pending map[string]string) error {
	for p, id := range pending {
		if err := ix.Defer(p, id); err != nil {
			return err
		}
	}
	return nil
}

// settle readies the target's index to plan win: it confirms the pending
// files win's writes render to and, unless win is a replay's window of
// no-ops, resolves the rest. Sweeps, deletes, sensitive writes and changed or new
// objects all need the whole subtree: a sweep deletes what no file names
// any more, a new object's path must not be taken, a sensitive document
// must not be shared; being conservative costs a read, a wrong plan a bad
// commit.
func (s *branchState) settle(ctx context.Context, win *window) error {
	ts, ok := s.targets[win.target]
	if !ok || ts.index == nil || ts.index.PendingCount() == 0 {
		return nil
	}
	noop := s.confirm(ts, win)
	if ts.index.PendingCount() == 0 {
		s.releaseBlobs() // the last pending file was confirmed: the forge's copy can go
		return nil
	}
	if !mustResolve(ts.index.PendingCount(), noop, win.replaying) {
		return nil
	}
	return s.resolvePending(ctx, ts)
}

// planSettled settles the target's index for win and plans it. A window
// planned with files still pending was judged to change nothing, a
// prediction the planner may not share (an object it moves to the path
// placement now gives it, a refusal): if the plan changes or refuses
// anything, or fails, the pending files are read and the window planned
// again, so only a plan that writes nothing is ever made with files
// unread.
func (s *branchState) planSettled(ctx context.Context, win *window) (*windowPlan, error) {
	if err := s.settle(ctx, win); err != nil {
		return nil, err
	}
	plan, err := s.planReading(ctx, win)
	ts := s.targets[win.target]
	if ts == nil || ts.index == nil || ts.index.PendingCount() == 0 ||
		(err == nil && len(plan.files) == 0 && len(plan.refusals) == 0) {
		return plan, err
	}
	if err := s.resolvePending(ctx, ts); err != nil {
		return nil, err
	}
	return s.planReading(ctx, win)
}

// planReading plans win, reading back first the files whose bytes the
// index let go that the plan turns out to need (manifest's released files:
// an edit through a kustomization override, an object placed beside
// another in one file), and planning again. Nearly every plan needs none.
func (s *branchState) planReading(ctx context.Context, win *window) (*windowPlan, error) {
	plan, err := s.plan(win)
	var needed *manifest.ContentNeededError
	if !errors.As(err, &needed) {
		return plan, err
	}
	ts := s.targets[win.target]
	if err := s.restore(ctx, ts, needed.Paths); err != nil {
		ts.index = nil // read from the forge afresh on the next try, not failed the same way
		return nil, err
	}
	return s.plan(win)
}

// restore reads the files at paths and gives them back to the target's
// index (manifest.Index.Restore), which holds them until its next commit.
func (s *branchState) restore(ctx context.Context, ts *targetState, paths []string) error {
	ids := make(map[string]string, len(paths))
	for _, p := range paths {
		ids[p] = ts.blobIDs[p]
	}
	files, err := s.readFiles(ctx, ids, false)
	if err != nil {
		return err
	}
	if err := ts.index.Restore(files); err != nil {
		return fmt.Errorf("indexing %s at %s: %w", ts.target.Path, ts.at, err)
	}
	return nil
}

// readFiles reads files by blob id, by path: the blob cache, then the
// forge, in path order. cache keeps what the forge answered in the blob
// cache.
func (s *branchState) readFiles(ctx context.Context, ids map[string]string, cache bool) (map[string][]byte, error) {
	files := make(map[string][]byte, len(ids))
	var missing []forges.TreeEntry
	for p, id := range ids {
		if content, ok := s.blobs.get(id); ok {
			files[p] = content
			continue
		}
		missing = append(missing, forges.TreeEntry{Path: p, BlobID: id, Mode: forges.ModeRegular})
	}
	sort.Slice(missing, func(i, j int) bool { return missing[i].Path < missing[j].Path })
	contents, err := readBlobs(ctx, s.forge, missing)
	if err != nil {
		return nil, err
	}
	for i, e := range missing {
		if cache {
			s.blobs.put(e.BlobID, contents[i])
		}
		files[e.Path] = contents[i]
	}
	return files, nil
}

// mustResolve decides whether the pending files are read before a plan:
// whenever some remain, unless the window is part of a replay (or a
// catch-up) and only no-ops, so that later windows of the replay may still
// confirm them.
func mustResolve(pending int, noop, replaying bool) bool { return pending > 0 && !(noop && replaying) }

// confirm registers each pending file that is exactly the rendering of one
// of win's writes as that object's document (manifest.Index.Confirm), which
// keeps its sum, not its bytes. It reports whether every
// write of win is a no-op: an upsert of a plain object whose rendering is
// the content of the file the index finds the object in, and no sweep.
func (s *branchState) confirm(ts *targetState, win *window) (noop bool) {
	noop = len(win.sweeps) == 0
	for _, wr := range win.writes {
		if wr.YAML == nil || wr.Sensitive {
			noop = false
			continue
		}
		content := manifest.FileContent(wr.YAML)
		id := gitfile.BlobID(content, s.idLike)
		ts.index.Confirm(id, content, wr.ID)
		if noop {
			p, found := ts.index.Lookup(wr.ID)
			noop = found && ts.blobIDs[p] == id
		}
	}
	return noop
}

// resolvePending reads every pending file of the target (the blob cache,
// then the forge) and indexes it parsed; then the forge may let its blobs
// go (forges.BlobReleaser). The load did not tell it so while files were
// pending: the go-git forge still holds their blobs from the listing's
// fetch and answers these reads from memory. One that let them go (a
// blob-less fetch) fetches the snapshot again once for all of them.
func (s *branchState) resolvePending(ctx context.Context, ts *targetState) error {
	files, err := s.readFiles(ctx, ts.index.Pending(), true)
	if err != nil {
		return err
	}
	if err := ts.index.Resolve(files); err != nil {
		return fmt.Errorf("indexing %s at %s: %w", ts.target.Path, ts.at, err)
	}
	s.releaseBlobs()
	return nil
}
