package branch

import "container/list"

// blobCache keeps blob contents by id, evicting the least recently used
// once the total size passes max. Blob ids are content hashes, so an entry
// is never stale.
type blobCache struct {
	max, size int
	order     *list.List
	entries   map[string]*list.Element
}

type blobEntry struct {
	id      string
	content []byte
}

func newBlobCache(max int) *blobCache {
	return &blobCache{max: max, order: list.New(), entries: map[string]*list.Element{}}
}

func (c *blobCache) get(id string) ([]byte, bool) {
	el, ok := c.entries[id]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*blobEntry).content, true
}

func (c *blobCache) put(id string, content []byte) {
	if _, ok := c.entries[id]; ok || len(content) > c.max {
		return
	}
	c.entries[id] = c.order.PushFront(&blobEntry{id: id, content: content})
	c.size += len(content)
	for c.size > c.max {
		oldest := c.order.Back()
		e := oldest.Value.(*blobEntry)
		c.order.Remove(oldest)
		delete(c.entries, e.id)
		c.size -= len(e.content)
	}
}
