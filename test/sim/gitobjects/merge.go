package gitobjects

import (
	"fmt"
	"sort"

	"github.com/go-git/go-git/v5/plumbing"
)

// MergeFiles is a three-way merge of flattened trees at file level, what the
// simulators need to merge a pull request or bring its base into its head:
// a path only one side changed since base takes that side's entry, a path
// both changed the same way takes it once, and a path both changed
// differently is a conflict. Git would merge the two edits of one file line
// by line when they touch different lines; the simulators do not, so they
// refuse some merges Git would make (a stricter forge, never a laxer one).
// conflicts lists the conflicting paths, sorted; merged is nil then.
func MergeFiles(base, ours, theirs Files) (merged Files, conflicts []string) {
	merged = Files{}
	paths := map[string]bool{}
	for _, files := range []Files{base, ours, theirs} {
		for path := range files {
			paths[path] = true
		}
	}
	for path := range paths {
		entry, ok, conflict := mergeEntry(base, ours, theirs, path)
		switch {
		case conflict:
			conflicts = append(conflicts, path)
		case ok:
			merged[path] = entry
		}
	}
	if len(conflicts) > 0 {
		sort.Strings(conflicts)
		return nil, conflicts
	}
	return merged, nil
}

// mergeEntry is one path's outcome: its entry (ok false: absent) or a
// conflict.
func mergeEntry(base, ours, theirs Files, path string) (entry Entry, ok, conflict bool) {
	b, inBase := base[path]
	o, inOurs := ours[path]
	t, inTheirs := theirs[path]
	oursChanged := inOurs != inBase || o != b
	theirsChanged := inTheirs != inBase || t != b
	switch {
	case !theirsChanged:
		return o, inOurs, false
	case !oursChanged:
		return t, inTheirs, false
	case inOurs == inTheirs && o == t:
		return o, inOurs, false
	}
	return Entry{}, false, true
}

// MergeCommits merges the trees of commits ours and theirs over their merge
// base and writes the merged tree. It returns the tree's id, or the
// conflicting paths. The histories must share a commit.
func (s *Store) MergeCommits(ours, theirs plumbing.Hash) (tree plumbing.Hash, conflicts []string, err error) {
	base, ok := s.MergeBase(ours, theirs)
	if !ok {
		return plumbing.ZeroHash, nil, fmt.Errorf("%s and %s share no history", ours, theirs)
	}
	var sides [3]Files
	for i, h := range []plumbing.Hash{base, ours, theirs} {
		commit, err := s.Commit(h)
		if err != nil {
			return plumbing.ZeroHash, nil, err
		}
		if sides[i], err = s.FilesOf(commit.TreeHash); err != nil {
			return plumbing.ZeroHash, nil, err
		}
	}
	merged, conflicts := MergeFiles(sides[0], sides[1], sides[2])
	if len(conflicts) > 0 {
		return plumbing.ZeroHash, conflicts, nil
	}
	tree, err = s.WriteFiles(merged)
	return tree, nil, err
}
