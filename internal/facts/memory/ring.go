package memory

import (
	"sort"
	"time"

	"github.com/configbutler/gitops-reverser/internal/facts"
)

// entry is one retained fact and when it was published.
type entry struct {
	fact facts.Fact
	at   time.Time
}

// ring holds the newest facts of one stream, at most max of them. Every
// fact gets a sequence number in publish order; first is the oldest still
// held and next the one the next publish gets, so a follower that holds a
// sequence number below first knows how many it lost.
//
// The buffer grows by append until it holds max entries and is circular
// from then on, so a stream with few facts costs little.
type ring struct {
	max   int
	buf   []entry
	head  int // index in buf of the entry numbered first
	first uint64
	next  uint64
}

func (r *ring) len() int { return int(r.next - r.first) }

// at returns the entry numbered seq, which must be in [first, next).
func (r *ring) at(seq uint64) *entry {
	return &r.buf[(r.head+int(seq-r.first))%len(r.buf)]
}

// push appends e, dropping the oldest entry when the ring is full.
func (r *ring) push(e entry) {
	n := r.len()
	switch {
	case n < len(r.buf):
		r.buf[(r.head+n)%len(r.buf)] = e
	case len(r.buf) < r.max:
		r.linearize()
		r.buf = append(r.buf, e)
	default:
		r.buf[r.head] = e
		r.head = (r.head + 1) % len(r.buf)
		r.first++
	}
	r.next++
}

// linearize moves the entries to the front of buf in order, so that append
// extends the ring at its newest end.
func (r *ring) linearize() {
	if r.head == 0 {
		r.buf = r.buf[:r.len()]
		return
	}
	ordered := make([]entry, r.len(), min(2*len(r.buf), r.max))
	for i := range ordered {
		ordered[i] = *r.at(r.first + uint64(i))
	}
	r.buf, r.head = ordered, 0
}

// dropBefore drops the entries published before cutoff from the old end.
func (r *ring) dropBefore(cutoff time.Time) {
	for r.len() > 0 && r.buf[r.head].at.Before(cutoff) {
		r.buf[r.head] = entry{} // release the fact's strings
		r.head = (r.head + 1) % len(r.buf)
		r.first++
	}
}

// firstAtOrAfter returns the sequence number of the oldest entry published
// at or after t (next when there is none). Publish times never decrease
// within a ring, so the entries are sorted by them.
func (r *ring) firstAtOrAfter(t time.Time) uint64 {
	i := sort.Search(r.len(), func(i int) bool { return !r.at(r.first + uint64(i)).at.Before(t) })
	return r.first + uint64(i)
}

// lastPublished is when the newest entry was published (zero when empty).
func (r *ring) lastPublished() time.Time {
	if r.len() == 0 {
		return time.Time{}
	}
	return r.at(r.next - 1).at
}

// from copies the facts numbered [seq, next).
func (r *ring) from(seq uint64) []facts.Fact {
	out := make([]facts.Fact, 0, r.next-seq)
	for ; seq < r.next; seq++ {
		out = append(out, r.at(seq).fact)
	}
	return out
}
