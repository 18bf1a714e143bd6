package attribution

// link is an entry's place in one entryList.
type link struct{ prev, next *entry }

// entryList is a doubly linked list threaded through one link of each
// entry, oldest first. The index keeps three orders of its entries (all,
// per stream, TTL'd); a link inside the entry costs no allocation of its
// own, where container/list spends one element per entry per list.
type entryList struct {
	head, tail *entry
	n          int
	// at is the link of e this list threads through.
	at func(e *entry) *link
}

func (l *entryList) Len() int      { return l.n }
func (l *entryList) Front() *entry { return l.head }

// Next is the entry after e in l, nil at the end.
func (l *entryList) Next(e *entry) *entry { return l.at(e).next }

// Contains reports whether e is in l: the head, or after another entry.
func (l *entryList) Contains(e *entry) bool { return l.head == e || l.at(e).prev != nil }

// PushBack appends e, which must not be in l.
func (l *entryList) PushBack(e *entry) {
	ln := l.at(e)
	ln.prev, ln.next = l.tail, nil
	if l.tail != nil {
		l.at(l.tail).next = e
	} else {
		l.head = e
	}
	l.tail = e
	l.n++
}

// Remove takes e out of l; an e not in l is left alone.
func (l *entryList) Remove(e *entry) {
	if !l.Contains(e) {
		return
	}
	ln := l.at(e)
	if ln.prev != nil {
		l.at(ln.prev).next = ln.next
	} else {
		l.head = ln.next
	}
	if ln.next != nil {
		l.at(ln.next).prev = ln.prev
	} else {
		l.tail = ln.prev
	}
	*ln = link{}
	l.n--
}

func allLink(e *entry) *link    { return &e.all }
func streamLink(e *entry) *link { return &e.inStream }
func ttlLink(e *entry) *link    { return &e.inTTL }
