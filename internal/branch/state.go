package branch

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/gitfile"
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
	// idLike is an object id the repository gave, whose length tells the
	// blob ids of its object format (gitfile.BlobID); "" before any.
	idLike string
	// expected are renderings the worker is about to write (expect), whose
	// blob ids the next subtree read computes in the listing's format.
	expected []rendering
	// startFrom names the branch a branch that does not exist starts from
	// (pull-request mode's base); "" is the repository's default branch.
	startFrom string
	// fresh, when set, is the commit whose tree the next commit is built
	// on instead of the head's (pull-request mode starting afresh from the
	// base): the commit is a merge of it into the head (MergeParent).
	fresh string
}

// rendering is a file the worker is about to write: the operator's
// rendering of one object (manifest.FileContent of a Write's YAML).
type rendering struct {
	Content []byte
	ID      manifest.ObjectID
}

type targetState struct {
	target Target
	index  *manifest.Index
	// blobIDs is the blob id of every file of the index, by path, at the
	// same tip: from the tree listing the index was built from, then from
	// the worker's own commits. A plan gives each change its path's base
	// blob from it, so no forge reads a tree to learn it.
	blobIDs map[string]string
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

// forget drops what the state knows of the branch: the next commit reads
// the head again and reloads every index that does not describe it.
func (s *branchState) forget() { s.known, s.fresh = false, "" }

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
	if id := s.tip(); id != "" {
		s.idLike = id
	}
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
	name := s.startFrom
	if name == "" && !ok {
		return "", nil
	}
	if name == "" {
		var err error
		if name, err = brancher.DefaultBranch(ctx); err != nil {
			return "", fmt.Errorf("reading the default branch to start branch %s from: %w", s.branch, err)
		}
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
	if s.fresh != "" {
		return s.fresh
	}
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

// expect names the renderings the worker is about to write. After a
// restart nearly every mirrored file is one of these, unchanged: the next
// subtree read caches them under the blob ids the listing's object format
// gives them, so loading an index reads only the files that differ rather
// than every file, one request each, and the index takes a file that is one
// of them as that object's rendering without parsing it. Where the worker
// knows ids (the tree it read, its own commits) it uses them and computes
// nothing.
func (s *branchState) expect(files []rendering) { s.expected = files }

// ensureLoaded makes the target's index describe the current tip. On a
// branch that does not exist yet that is its base: files the default branch
// already has under the target's path are the starting state, existing
// documents the planner edits in place rather than writes again.
func (s *branchState) ensureLoaded(ctx context.Context, key TargetKey) error {
	defer func() { s.expected = nil }() // named for this load only
	ts, ok := s.targets[key]
	if !ok {
		return fmt.Errorf("GitTarget %s is not registered with the branch worker", key)
	}
	if !s.known {
		if err := s.readHead(ctx); err != nil {
			return err
		}
	}
	if ts.index != nil && ts.at == s.tip() {
		return nil
	}
	sub, err := s.readSubtree(ctx, ts.target.Path, ts.carriable())
	if err != nil {
		return err
	}
	ix, err := manifest.NewIndexRendered(ts.target.Path, sub.files, sub.rendered)
	if err == nil {
		err = deferAll(ix, sub.pending)
	}
	if err == nil {
		err = carryAll(ix, ts.index, sub.carried)
	}
	if err != nil {
		return fmt.Errorf("indexing %s at %s: %w", ts.target.Path, s.tip(), err)
	}
	ts.index, ts.blobIDs, ts.at = ix, sub.ids, s.tip()
	s.releaseBlobs()
	return nil
}

// carriable is, by blob id, a path of a file the target's index knows
// (read, or its bytes let go) at its tip: a reload after a conflict takes
// a file that kept its blob id from the index it replaces, with no read and
// no parse. The index holds no file's bytes twice, so the blob cache does
// not hold written files: this is what spares reading them back.
func (ts *targetState) carriable() map[string]string {
	if ts.index == nil {
		return nil
	}
	out := make(map[string]string)
	for p, id := range ts.blobIDs {
		if ts.index.Known(p) {
			out[id] = p
		}
	}
	return out
}

// carryAll indexes in ix the files sub carried from prior (path in prior
// by path), in path order as NewIndex adds files.
func carryAll(ix, prior *manifest.Index, carried map[string]string) error {
	for _, p := range slices.Sorted(maps.Keys(carried)) {
		if !ix.Carry(p, prior, carried[p]) {
			return fmt.Errorf("carrying %s from the index it replaces: not a file it knows", p)
		}
	}
	return nil
}

// releaseBlobs tells a forge that keeps the blobs it fetched or pushed in
// memory (forges.BlobReleaser) that the worker holds the files now, in its
// indexes and blob cache: otherwise every mirrored file stayed in memory
// twice, once here and once in the forge's object store. While any
// target has pending files it waits: a forge that kept their blobs answers
// their reads (settle) itself, without fetching again.
func (s *branchState) releaseBlobs() {
	for _, ts := range s.targets {
		if ts.index != nil && ts.index.PendingCount() > 0 {
			return // another target's pending files are read from them yet
		}
	}
	if releaser, ok := s.forge.(forges.BlobReleaser); ok {
		releaser.ReleaseBlobs()
	}
}

// readSubtree reads the files under root at the tip, their blob ids, and
// which of them are exactly an expected rendering (by path, its object).
// Only YAML is read, and of it only what the blob cache and the expected
// renderings do not answer and the index cannot hold pending (a
// kustomization): other files only need to be known to exist, and a
// manifest file is pending (blob id by path) until a window confirms or
// needs it (settle).
func (s *branchState) readSubtree(ctx context.Context, root string, carriable map[string]string) (subtree, error) {
	sub := subtree{files: map[string][]byte{}, ids: map[string]string{}, rendered: map[string]manifest.ObjectID{},
		pending: map[string]string{}, carried: map[string]string{}}
	tip := s.tip()
	if tip == "" {
		return sub, nil
	}
	// The expected contents serve this read only: the index takes the ones
	// the tree has as renderings and lets their bytes go, the rest are
	// dropped with the read, so a cold start into an empty repository
	// keeps no second copy of every file it writes. A forge that keeps
	// fetched blobs in memory keeps none of these (forges.BlobHolder).
	seeds := make(map[string]int, len(s.expected))
	for i, r := range s.expected {
		seeds[gitfile.BlobID(r.Content, tip)] = i
	}
	if holder, ok := s.forge.(forges.BlobHolder); ok && len(seeds) > 0 {
		holder.HoldBlobs(func(id string) ([]byte, bool) {
			i, ok := seeds[id]
			if !ok {
				return nil, false
			}
			return s.expected[i].Content, true
		})
		defer holder.HoldBlobs(nil)
	}
	entries, err := s.forge.Tree(ctx, tip, root)
	if err != nil {
		return subtree{}, fmt.Errorf("listing %s at %s: %w", root, tip, err)
	}
	var missing []forges.TreeEntry
	for _, e := range entries {
		sub.ids[e.Path] = e.BlobID
		if !isYAML(e.Path) {
			sub.files[e.Path] = nil
			continue
		}
		if i, ok := seeds[e.BlobID]; ok {
			seed := s.expected[i]
			sub.files[e.Path] = seed.Content
			sub.rendered[e.Path] = seed.ID
			continue
		}
		deferrable := manifest.Deferrable(root, e.Path)
		if from, ok := carriable[e.BlobID]; ok && deferrable {
			sub.carried[e.Path] = from
			continue
		}
		if content, ok := s.blobs.get(e.BlobID); ok {
			sub.files[e.Path] = content
			continue
		}
		if deferrable {
			sub.pending[e.Path] = e.BlobID
			continue
		}
		missing = append(missing, e)
	}
	contents, err := readBlobs(ctx, s.forge, missing)
	if err != nil {
		return subtree{}, err
	}
	for i, e := range missing {
		s.blobs.put(e.BlobID, contents[i])
		sub.files[e.Path] = contents[i]
	}
	return sub, nil
}

// subtree is what readSubtree learnt of a target's subtree at the tip.
type subtree struct {
	files    map[string][]byte            // read, by path (nil for a file only known to exist)
	ids      map[string]string            // every file's blob id, by path
	rendered map[string]manifest.ObjectID // files that are an expected rendering, by path
	pending  map[string]string            // manifest files left unread, blob id by path
	carried  map[string]string            // files the index it replaces knows: their path there, by path
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
	s.head, s.base, s.fresh = res.Commit, "", ""
	if !isStandIn(res.Commit) {
		s.idLike = res.Commit
	}
	for _, ts := range s.targets {
		if ts.at != old || ts.index == nil {
			continue
		}
		if ts.target.Key == plan.target {
			if err := ts.index.Apply(plan.result); err != nil {
				ts.index = nil // rebuilt from the forge on next use
				continue
			}
			ts.advanceBlobs(plan.files, res.Blobs, s.idLike)
		} else if overlaps(ts.target.Path, plan.files) {
			ts.index = nil
			continue
		}
		ts.at = s.head
	}
	s.cacheWritten(plan, res.Blobs)
}

// advanceBlobs moves the blob ids to a commit made with changes: a put
// takes the id the forge answered (blobs), else, in a chain being planned
// before the forge has made it, the id its content has in the object
// format of ids like like; a delete takes the path away.
func (ts *targetState) advanceBlobs(changes []gitfile.Change, blobs map[string]string, like string) {
	for _, c := range changes {
		switch id, ok := blobs[c.Path]; {
		case c.Delete:
			delete(ts.blobIDs, c.Path)
		case ok:
			ts.blobIDs[c.Path] = id
		default:
			ts.blobIDs[c.Path] = gitfile.BlobID(c.Content, like)
		}
	}
}

// cacheWritten caches the contents a commit put under the blob ids the
// forge answered, but for manifest files: the index holds those, or lets
// their bytes go (a rendering), and a reload carries them from it
// (carriable). Caching them kept every mirrored file in memory.
func (s *branchState) cacheWritten(plan *windowPlan, blobs map[string]string) {
	root := ""
	if ts, ok := s.targets[plan.target]; ok {
		root = ts.target.Path
	}
	for _, c := range plan.files {
		if id, ok := blobs[c.Path]; ok && !c.Delete && !manifest.Deferrable(root, c.Path) {
			s.blobs.put(id, c.Content)
		}
	}
}

func isYAML(p string) bool {
	return strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")
}

// overlaps reports whether any changed path lies under root. GitTargets on
// one branch never overlap (the controller refuses it); this only guards an
// index against a commit made for another target.
func overlaps(root string, changes []gitfile.Change) bool {
	if root == "." || root == "" {
		return len(changes) > 0
	}
	for _, c := range changes {
		if p := c.Path; p == root || strings.HasPrefix(p, root+"/") {
			return true
		}
	}
	return false
}
