package watch

import (
	"context"
	"sync"
)

// maxInFlight bounds the live events a stream has taken off the watch but
// not yet handled; beyond it the stream stops reading, so back-pressure
// still reaches the watch.
const maxInFlight = 1024

// lanes run the Prepare step of a stream's live events: one lane per
// object, so an object's events are prepared and handled one after another
// in watch order, while another object's lane goes on beside it. One
// object's wait for its author therefore never holds back another's commit
// (the head-of-line cost the grace window had on a single goroutine).
//
// Handler is still called one event at a time. The cursor only moves past
// an event once it and every event read before it are handled, so a crash
// never resumes past a change still being prepared.
type lanes struct {
	stream *Stream
	slots  chan struct{}

	// handling serializes Handler calls from the lanes.
	handling sync.Mutex

	mu      sync.Mutex
	pending map[ObjectKey][]*laneEvent
	// marks are the resourceVersions read, in watch order, each done once
	// handled; the cursor advances over the done prefix.
	marks []*laneEvent
	idle  *sync.Cond
	busy  int
	err   error
	// failed closes when a lane's handler fails: the stream stops.
	failed chan struct{}
}

type laneEvent struct {
	ev   Event
	rv   string
	done bool
}

func newLanes(s *Stream) *lanes {
	l := &lanes{stream: s, slots: make(chan struct{}, maxInFlight), pending: map[ObjectKey][]*laneEvent{},
		failed: make(chan struct{})}
	l.idle = sync.NewCond(&l.mu)
	return l
}

// submit queues a live Upsert or Delete on its object's lane; it blocks
// while maxInFlight events are in flight.
func (l *lanes) submit(ctx context.Context, ev Event) error {
	select {
	case l.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	case <-l.failed:
		return l.failure()
	}
	key := ObjectKey{ev.Object.GetNamespace(), ev.Object.GetName()}
	e := &laneEvent{ev: ev, rv: ev.Object.GetResourceVersion()}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.marks = append(l.marks, e)
	l.busy++
	queue, running := l.pending[key]
	l.pending[key] = append(queue, e)
	if !running {
		go l.run(ctx, key)
	}
	return nil
}

// mark queues a cursor point with no event to handle (a live bookmark):
// it is stored once every event read before it is handled.
func (l *lanes) mark(rv string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.marks = append(l.marks, &laneEvent{rv: rv, done: true})
	l.advanceLocked()
}

// run works through one object's queue until it is empty.
func (l *lanes) run(ctx context.Context, key ObjectKey) {
	for {
		l.mu.Lock()
		queue := l.pending[key]
		if len(queue) == 0 {
			delete(l.pending, key)
			l.mu.Unlock()
			return
		}
		e := queue[0]
		failed := l.err != nil
		l.mu.Unlock()

		var err error
		if !failed { // after a failure the stream stops: nothing more is handled
			err = l.handle(ctx, e.ev)
		}

		l.mu.Lock()
		l.pending[key] = l.pending[key][1:]
		l.finishLocked(e, err)
		l.mu.Unlock()
		<-l.slots
	}
}

// handle prepares ev and hands it to the handler.
func (l *lanes) handle(ctx context.Context, ev Event) error {
	ev.Prepared = l.stream.Prepare(ctx, ev)
	l.handling.Lock()
	defer l.handling.Unlock()
	return l.stream.handle(ctx, ev)
}

func (l *lanes) finishLocked(e *laneEvent, err error) {
	l.busy--
	if err != nil && l.err == nil {
		l.err = err
		close(l.failed)
	}
	if err == nil {
		e.done = true
		l.advanceLocked()
	}
	if l.busy == 0 {
		l.idle.Broadcast()
	}
}

// advanceLocked moves the cursor over the handled prefix of marks.
func (l *lanes) advanceLocked() {
	last := ""
	n := 0
	for ; n < len(l.marks) && l.marks[n].done; n++ {
		last = l.marks[n].rv
	}
	clear(l.marks[:n])
	l.marks = l.marks[n:]
	if last != "" && l.stream.Cursor != nil {
		l.stream.Cursor.Advance(last)
	}
}

// drain waits until every queued event is handled: the events that keep
// their place against all others (a replay, Synced, Resumed) come after
// it. It returns a lane's handler failure.
func (l *lanes) drain() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.waitLocked()
	return l.err
}

// wait returns once every queued event is handled or dropped.
func (l *lanes) wait() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.waitLocked()
}

func (l *lanes) waitLocked() {
	for l.busy > 0 {
		l.idle.Wait()
	}
}

func (l *lanes) failure() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}
