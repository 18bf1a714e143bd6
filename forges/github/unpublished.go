package github

import (
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"strconv"
	"sync"

	"github.com/configbutler/gitops-reverser/forges"
)

// unpublished remembers the last chain of commits (often of one) this
// client created whose ref update did not go through for a reason that
// changed nothing on the branch (a rate limit, a transient failure). When
// the same chain is asked for again on the same head, only the ref update
// is sent: the tree and commit objects already exist, and creating them
// again would spend two more content-creating requests per commit of a
// budget that just ran out.
type unpublished struct {
	mu      sync.Mutex
	key     [sha256.Size]byte
	results []forges.CommitResult
	ok      bool
}

func (u *unpublished) remember(key [sha256.Size]byte, results []forges.CommitResult) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.key, u.results, u.ok = key, results, true
}

func (u *unpublished) take(key [sha256.Size]byte) ([]forges.CommitResult, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if !u.ok || u.key != key {
		return nil, false
	}
	u.ok = false
	return u.results, true
}

// chainKey identifies what a chain of commit requests asks for, leaving
// out what a retry changes or the chain does not read: the dates (a retry
// of the same change some seconds later is the same commit) and the heads
// of the requests after the first.
func chainKey(reqs []forges.CommitRequest, verified bool) [sha256.Size]byte {
	h := sha256.New()
	field := func(s string) { writeField(h, []byte(s)) }
	for i, req := range reqs {
		if i > 0 {
			req.ExpectedHead, req.BaseHead = "", ""
		}
		field(req.Branch)
		field(req.ExpectedHead)
		field(req.BaseHead)
		field(req.MergeParent)
		field(req.Message)
		field(req.Author.Name)
		field(req.Author.Email)
		field(req.Committer.Name)
		field(req.Committer.Email)
		flags := []byte{0, 0}
		if req.Signer != nil {
			flags[0] = 1
		}
		if verified {
			flags[1] = 1
		}
		writeField(h, flags)
		// The number of changes first and a kind for each, so that no two
		// chains that split or mark their changes differently hash alike.
		field(strconv.Itoa(len(req.Changes)))
		for _, change := range req.Changes {
			field(change.Path)
			if change.Delete {
				field("delete")
				continue
			}
			field("put")
			writeField(h, change.Content)
		}
	}
	var key [sha256.Size]byte
	h.Sum(key[:0])
	return key
}

// writeField writes b with its length, so no two sequences of fields hash
// alike.
func writeField(h hash.Hash, b []byte) {
	_ = binary.Write(h, binary.BigEndian, uint64(len(b)))
	_, _ = h.Write(b)
}
