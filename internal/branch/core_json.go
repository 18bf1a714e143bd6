package branch

import (
	"encoding/json"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// coreJSON is the Core's state as plain, exported data: what a journal
// keeps. A Request keeps everything but its outcome, which is the
// stream's, not the core's.
type coreJSON struct {
	Config         CoreConfig
	Window         *window `json:",omitempty"`
	Pending        []*window
	Budget         pushBudget
	RetryAt        time.Time
	Parked         []parking
	Retry          wait.Backoff
	WindowSeq      uint64
	SettleWaiters  []waiter
	Flushers       []waiter
	CommitRequests []*Request
	Stopping       bool
	InFlight       bool
	Replay         replayState
	Silence        time.Duration
	Queued         int
	ChainLimit     int
}

// parking is one target's entry of Core.parked.
type parking struct {
	Target TargetKey
	Until  time.Time
}

// MarshalJSON writes the core's state.
func (c *Core) MarshalJSON() ([]byte, error) {
	parked := make([]parking, 0, len(c.parked))
	for t, until := range c.parked {
		parked = append(parked, parking{Target: t, Until: until})
	}
	slices.SortFunc(parked, func(a, b parking) int { return strings.Compare(a.Target.String(), b.Target.String()) })
	return json.Marshal(coreJSON{Config: c.conf, Window: c.window, Pending: c.pending, Budget: c.budget, RetryAt: c.retryAt,
		Parked: parked, Retry: c.retry, WindowSeq: c.windowSeq, SettleWaiters: c.settleWaiters, Flushers: c.flushers,
		CommitRequests: c.commitRequests, Stopping: c.stopping, InFlight: c.inFlight, Replay: c.replay, Silence: c.Silence, Queued: c.Queued,
		ChainLimit: c.ChainLimit})
}

// UnmarshalJSON restores a state MarshalJSON wrote.
func (c *Core) UnmarshalJSON(data []byte) error {
	var j coreJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	*c = Core{conf: j.Config, window: j.Window, pending: j.Pending, budget: j.Budget, retryAt: j.RetryAt,
		parked: map[TargetKey]time.Time{}, retry: j.Retry, windowSeq: j.WindowSeq, settleWaiters: j.SettleWaiters,
		flushers: j.Flushers, commitRequests: j.CommitRequests, stopping: j.Stopping, inFlight: j.InFlight, replay: j.Replay,
		Silence: j.Silence, Queued: j.Queued, ChainLimit: j.ChainLimit}
	for _, p := range j.Parked {
		c.parked[p.Target] = p.Until
	}
	return nil
}

// windowJSON is a window as plain data: its writes in first-seen order
// (the map is keyed by identity, which JSON cannot key by).
type windowJSON struct {
	Target    TargetKey
	Author    Author
	Writes    []Write
	Sweeps    []Sweep
	Bytes     int
	Reconcile bool
	Replaying bool
	Request   *Request `json:",omitempty"`
	Message   string
	Commit    string
	Refused   int
	Opened    time.Time
	LastEvent time.Time
	Seq       uint64
	Absorbed  []uint64 `json:",omitempty"`
}

// MarshalJSON writes the window.
func (w *window) MarshalJSON() ([]byte, error) {
	return json.Marshal(windowJSON{Target: w.target, Author: w.author, Writes: w.orderedWrites(), Sweeps: w.sweeps,
		Bytes: w.bytes, Reconcile: w.reconcile, Replaying: w.replaying, Request: w.request, Message: w.message,
		Commit: w.commit, Refused: w.refused, Opened: w.opened, LastEvent: w.lastEvent, Seq: w.seq, Absorbed: w.absorbed})
}

// UnmarshalJSON restores a window MarshalJSON wrote.
func (w *window) UnmarshalJSON(data []byte) error {
	var j windowJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	*w = window{target: j.Target, author: j.Author, at: newWriteIndex(len(j.Writes)), sweeps: j.Sweeps, bytes: j.Bytes,
		reconcile: j.Reconcile, replaying: j.Replaying, request: j.Request, message: j.Message, commit: j.Commit,
		refused: j.Refused, opened: j.Opened, lastEvent: j.LastEvent, seq: j.Seq, absorbed: j.Absorbed}
	w.writes = j.Writes
	for i := range w.writes {
		w.at.set(w.writes, i)
	}
	return nil
}
