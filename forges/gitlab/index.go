package gitlab

import (
	"path"
	"strings"
	"sync"

	"github.com/configbutler/gitops-reverser/forges"
)

// maxListings bounds the listings a pathIndex keeps: a worker reads one
// or two subtrees per head and commits on the newest, so a handful covers
// the heads it still commits on.
const maxListings = 8

// pathIndex remembers which files exist below a directory at a commit. The
// commits API needs to be told create or update for every path, and a
// wrong guess is refused; the index answers from listings the client has
// already made (Tree) and from its own commits, so a commit usually costs
// no tree read at all.
type pathIndex struct {
	mu       sync.Mutex
	listings []listing // oldest first
}

// listing is every file below dir ("" for the whole tree) at commit.
type listing struct {
	commit string
	dir    string
	files  map[string]struct{}
}

func (l listing) covers(commit, file string) bool {
	return l.commit == commit && isBelow(file, l.dir)
}

// isBelow reports whether file is inside directory dir.
func isBelow(file, dir string) bool {
	return dir == "" || strings.HasPrefix(file, dir+"/")
}

// remember keeps a listing, dropping the oldest beyond maxListings.
func (x *pathIndex) remember(commit, dir string, files map[string]struct{}) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.add(listing{commit: commit, dir: dir, files: files})
}

func (x *pathIndex) add(l listing) {
	x.listings = append(x.listings, l)
	if len(x.listings) > maxListings {
		x.listings = x.listings[len(x.listings)-maxListings:]
	}
}

// lookup says whether file exists at commit; known is false when no
// listing covers it.
func (x *pathIndex) lookup(commit, file string) (exists, known bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for i := len(x.listings) - 1; i >= 0; i-- {
		if l := x.listings[i]; l.covers(commit, file) {
			_, exists = l.files[file]
			return exists, true
		}
	}
	return false, false
}

// advance derives the listings of child, a commit made on parent with
// changes, from those of parent: what the client committed is all that
// differs.
func (x *pathIndex) advance(parent, child string, changes []forges.FileChange) {
	x.mu.Lock()
	defer x.mu.Unlock()
	var derived []listing
	for _, l := range x.listings {
		if l.commit != parent {
			continue
		}
		files := make(map[string]struct{}, len(l.files)+len(changes))
		for f := range l.files {
			files[f] = struct{}{}
		}
		for _, change := range changes {
			switch {
			case !isBelow(change.Path, l.dir):
			case change.Delete:
				delete(files, change.Path)
			default:
				files[change.Path] = struct{}{}
			}
		}
		derived = append(derived, listing{commit: child, dir: l.dir, files: files})
	}
	for _, l := range derived {
		x.add(l)
	}
}

// commonDir is the deepest directory holding every one of files; "" when
// only the root does.
func commonDir(files []string) string {
	if len(files) == 0 {
		return ""
	}
	common := path.Dir(files[0])
	for _, f := range files[1:] {
		for common != "." && !isBelow(f, common) {
			common = path.Dir(common)
		}
	}
	if common == "." {
		return ""
	}
	return common
}
