package branch

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	yaml "go.yaml.in/yaml/v3"

	"github.com/configbutler/gitops-reverser/internal/manifest"
)

// journaling steps a core as its executor will once it journals: each
// journaled event is encoded with the window it went into and appended to
// an in-memory stand-in for the Redis stream, and every commit or drop
// settles what the core no longer holds, which is trimmed from it.
type journaling struct {
	t       *testing.T
	core    *Core
	codec   JournalCodec
	index   JournalIndex
	stored  []storedEntry
	trimmed [][]string
	nextID  int
}

type storedEntry struct {
	id   string
	data []byte
}

func (j *journaling) step(at time.Duration, ev Event) []string {
	j.t.Helper()
	now := t0.Add(at)
	actions := j.core.Step(now, ev)
	rec := JournalRecord{At: now, Window: j.core.LastWindow(), Event: ev}
	data, ok, err := j.codec.Encode(rec)
	require.NoError(j.t, err)
	if ok {
		j.nextID++
		id := fmt.Sprintf("%d-0", j.nextID)
		j.stored = append(j.stored, storedEntry{id: id, data: data})
		j.index.Add(id, rec)
	}
	if _, commit := ev.(CommittedEvent); commit || (Journaled(ev) && !fills(ev)) {
		j.trim(j.index.Settle(j.core.HeldWindows()))
	}
	return renderActions(actions)
}

// trim does what redisstore.Journal.Trim does to the stream.
func (j *journaling) trim(t JournalTrim) {
	var removed []string
	kept := j.stored[:0]
	cut := slices.IndexFunc(j.stored, func(e storedEntry) bool { return e.id == t.UpTo })
	for i, e := range j.stored {
		if i <= cut || slices.Contains(t.Delete, e.id) {
			removed = append(removed, e.id)
			continue
		}
		kept = append(kept, e)
	}
	j.stored = kept
	j.trimmed = append(j.trimmed, removed)
}

// restore decodes what is stored into a fresh core, as a new owner does.
func (j *journaling) restore(fresh *Core) (*JournalIndex, []Action) {
	j.t.Helper()
	items := make([]JournalItem, 0, len(j.stored))
	for _, e := range j.stored {
		rec, err := j.codec.Decode(e.data)
		require.NoError(j.t, err)
		items = append(items, JournalItem{ID: e.id, Record: rec})
	}
	return RestoreJournal(fresh, items)
}

// heldJSON is what a core holds, as its journaled state says it.
func heldJSON(t *testing.T, c *Core) string {
	t.Helper()
	data, err := json.Marshal(c)
	require.NoError(t, err)
	var state struct {
		Window  json.RawMessage
		Pending json.RawMessage
	}
	require.NoError(t, json.Unmarshal(data, &state))
	held, err := json.Marshal(state)
	require.NoError(t, err)
	return string(held)
}

func testSealer(t *testing.T) JournalSealer {
	t.Helper()
	sealer, err := NewAEADSealer([]byte("0123456789abcdef0123456789abcdef"))
	require.NoError(t, err)
	return sealer
}

func TestJournalRestoresTheWindowsACoreHeld(t *testing.T) {
	other := TargetKey{Namespace: "team", Name: "other"}
	secret := change("token")
	secret.Sensitive = true
	edited := change("one")
	edited.YAML = append(edited.YAML, "data:\n  v: \"2\"\n"...)
	sweep := &Sweep{Scope: manifest.SweepScope{Kind: "ConfigMap", Namespace: "team"},
		Present: []manifest.ObjectID{change("one").ID, change("three").ID}}
	running := &journaling{t: t, core: testCore(nil), codec: JournalCodec{Sealer: testSealer(t)}}
	steps := []struct {
		at time.Duration
		ev Event
	}{
		{0, wrote(alice, "one")},                                                        // window 0
		{time.Second, wrote(alice, "two")},                                              // window 0
		{2 * time.Second, wrote(bob, "three")},                                          // window 1; window 0 goes out
		{3 * time.Second, SyncEvent{Target: coreTo, Sweep: sweep}},                      // window 2, the committer's
		{3 * time.Second, WriteEvent{Target: other, Author: alice, Write: change("x")}}, // window 3
		{4 * time.Second, TargetEvent{Target: other, Suspend: true}},                    // drops window 3
		{5 * time.Second, wrote(alice, "four")},                                         // window 4
		{11 * time.Second, TickEvent{}},                                                 // closes window 4 by silence
		{12 * time.Second, WriteEvent{Target: coreTo, Author: alice, Write: edited}},    // window 5
		{12 * time.Second, WriteEvent{Target: coreTo, Author: alice, Write: Write{ID: change("two").ID}}},
		{13 * time.Second, WriteEvent{Target: coreTo, Author: alice, Write: secret}},
		{13 * time.Second, committed(0)}, // window 1 goes out
	}
	for _, s := range steps {
		running.step(s.at, s.ev)
	}
	require.Equal(t, [][]string{{"5-0"}, {"1-0", "2-0"}}, running.trimmed,
		"the dropped target's write goes at once, out of order; window 0's two writes once it is committed")

	restored := testCore(nil)
	index, actions := running.restore(restored)
	require.Equal(t, heldJSON(t, running.core), heldJSON(t, restored),
		"the same windows, seqs, authors, writes in order, sweeps and times")
	require.Contains(t, renderActions(actions), "commit mirror/Bob:three", "the restored core commits the oldest window")
	require.Equal(t, running.index, *index, "the restored entries are indexed under the same windows")

	for _, s := range []struct {
		at time.Duration
		ev Event
	}{
		{14 * time.Second, committed(1)},
		{14 * time.Second, committed(2)},
		{20 * time.Second, TickEvent{}},
		{20 * time.Second, committed(4)},
	} {
		require.Equal(t, renderActions(running.core.Step(t0.Add(s.at), s.ev)), renderActions(restored.Step(t0.Add(s.at), s.ev)),
			"both cores decide the same after %T", s.ev)
	}
}

func TestJournalACommittedWindowSettlesExactlyItsEntries(t *testing.T) {
	other := TargetKey{Namespace: "team", Name: "other"}
	j := &journaling{t: t, core: testCore(nil)}
	j.step(0, wrote(alice, "one"))                                            // 1-0, window 0
	j.step(0, WriteEvent{Target: other, Author: alice, Write: change("two")}) // 2-0, window 1; window 0 goes out
	j.step(0, CloseEvent{})                                                   // window 1 waits
	j.step(0, FailedEvent{Seq: 0, Err: errors.New("cannot plan")})            // mirror parked; window 1 goes out
	j.step(0, committed(1))
	require.Equal(t, []string{"2-0"}, j.trimmed[0], "a window committed past a parked one: its entries alone")

	j.step(100*time.Millisecond, wrote(alice, "three")) // 3-0, window 2
	require.Equal(t, []string{"schedule +1s"}, j.step(100*time.Millisecond, CloseEvent{}), "the parked window absorbs window 2")
	require.Equal(t, map[uint64]bool{0: true, 2: true}, j.core.HeldWindows(), "a window coalesced into another is held with it")
	require.True(t, j.index.Settle(j.core.HeldWindows()).Empty())

	require.Equal(t, []string{"commit mirror/Alice:one,three", "schedule +1h0m1s"}, j.step(time.Second, TickEvent{}))
	j.step(time.Second, committed(0))
	require.Equal(t, []string{"1-0", "3-0"}, j.trimmed[1], "the absorbing window's commit settles both windows' entries")
	require.Empty(t, j.stored)
	require.Empty(t, j.index.Marks)
}

func TestJournalAMarkerGoesOnlyWithTheEntriesBeforeIt(t *testing.T) {
	index := JournalIndex{}
	index.Add("1-0", JournalRecord{Window: 0, Event: WriteEvent{}})
	index.Add("2-0", JournalRecord{Event: TargetEvent{Remove: true}})
	index.Add("3-0", JournalRecord{Window: 1, Event: WriteEvent{}})
	index.Add("4-0", JournalRecord{Window: 2, Event: WriteEvent{}})
	require.Equal(t, JournalTrim{Delete: []string{"4-0"}}, index.Settle(map[uint64]bool{0: true, 1: true}))
	require.Equal(t, JournalTrim{UpTo: "2-0"}, index.Settle(map[uint64]bool{1: true}))
	require.Equal(t, JournalTrim{UpTo: "3-0"}, index.Settle(nil))
	require.Empty(t, index.Marks)
}

func TestJournalATrimThatFailedGoesWithTheNext(t *testing.T) {
	failed := JournalTrim{UpTo: "2-0", Delete: []string{"4-0"}}
	require.Equal(t, JournalTrim{UpTo: "5-0", Delete: []string{"4-0", "7-0"}}, failed.Merge(JournalTrim{UpTo: "5-0", Delete: []string{"7-0"}}))
	require.Equal(t, JournalTrim{UpTo: "2-0", Delete: []string{"4-0", "7-0"}}, failed.Merge(JournalTrim{Delete: []string{"7-0"}}))
	require.Equal(t, failed, JournalTrim{}.Merge(failed))
	require.Equal(t, []string{"4-0"}, failed.Delete, "merging leaves the failed trim as it was")
}

func TestJournalCodec(t *testing.T) {
	at := t0.Add(time.Minute)
	tree := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	withTree := change("one")
	withTree.Node, withTree.ChangedWith, withTree.Received, withTree.CatchUp = tree, []string{"kubectl"}, t0, true
	secret := change("token")
	secret.Sensitive = true
	sealed := JournalCodec{Sealer: testSealer(t)}
	for name, tc := range map[string]struct {
		codec     JournalCodec
		ev        Event
		want      Event // what Decode gives back; nil: ev
		journaled bool
	}{
		"a write, without its rendered tree": {ev: WriteEvent{Target: coreTo, Author: alice, Write: withTree}, journaled: true,
			want: WriteEvent{Target: coreTo, Author: alice, Write: Write{ID: withTree.ID, YAML: withTree.YAML, Received: t0,
				ChangedWith: []string{"kubectl"}, CatchUp: true}}},
		"a delete keeps no YAML": {ev: WriteEvent{Target: coreTo, Write: Write{ID: change("one").ID}}, journaled: true},
		"an empty object is not a delete": {ev: WriteEvent{Target: coreTo, Write: Write{ID: change("one").ID, YAML: []byte{}}},
			journaled: true},
		"a sensitive write, sealed": {codec: sealed, ev: WriteEvent{Target: coreTo, Write: secret}, journaled: true},
		"a sensitive delete needs no sealer": {ev: WriteEvent{Target: coreTo, Write: Write{ID: secret.ID, Sensitive: true}},
			journaled: true},
		"a sweep": {ev: SyncEvent{Target: coreTo, Sweep: &Sweep{Scope: manifest.SweepScope{Kind: "ConfigMap", Namespace: "team"},
			Present: []manifest.ObjectID{change("one").ID}}, CloseWindow: true}, journaled: true},
		"an end of replay":         {ev: SyncEvent{Target: coreTo, CloseWindow: true}, journaled: true},
		"a removed target":         {ev: TargetEvent{Target: coreTo, Remove: true}, journaled: true},
		"a suspended target":       {ev: TargetEvent{Target: coreTo, Suspend: true}, journaled: true},
		"a target set":             {ev: TargetEvent{Target: coreTo}},
		"a sync that does nothing": {ev: SyncEvent{Target: coreTo}},
		"a tick":                   {ev: TickEvent{}},
		"a flush":                  {ev: FlushEvent{ID: 1, Target: coreTo}},
		"a close":                  {ev: CloseEvent{}},
		"a request":                {ev: AttachEvent{Request: &Request{ID: "team/save"}}},
		"a commit":                 {ev: committed(0)},
		"a failure":                {ev: FailedEvent{Seq: 0, Err: errors.New("down")}},
		"a stop":                   {ev: StopEvent{}},
	} {
		t.Run(name, func(t *testing.T) {
			data, ok, err := tc.codec.Encode(JournalRecord{At: at, Window: 7, Event: tc.ev})
			require.NoError(t, err)
			require.Equal(t, tc.journaled, ok)
			require.Equal(t, tc.journaled, Journaled(tc.ev))
			if !ok {
				return
			}
			require.NotContains(t, string(data), "Node")
			rec, err := tc.codec.Decode(data)
			require.NoError(t, err)
			want := tc.want
			if want == nil {
				want = tc.ev
			}
			require.Equal(t, JournalRecord{At: at, Window: 7, Event: want}, rec)
		})
	}
}

func TestJournalKeepsNoSecretInClear(t *testing.T) {
	secret := change("token")
	secret.Sensitive, secret.YAML = true, []byte("kind: Secret\ndata:\n  password: aHVudGVyMg==\n")
	ev := WriteEvent{Target: coreTo, Write: secret}
	_, _, err := JournalCodec{}.Encode(JournalRecord{Event: ev})
	require.ErrorIs(t, err, ErrSensitiveUnsealed, "no sealer, no journal")

	data, ok, err := JournalCodec{Sealer: testSealer(t)}.Encode(JournalRecord{Event: ev})
	require.NoError(t, err)
	require.True(t, ok)
	require.NotContains(t, string(data), "aHVudGVyMg")
	require.NotContains(t, string(data), "a2luZDogU2VjcmV0", "nor its base64")
	_, err = JournalCodec{}.Decode(data)
	require.ErrorIs(t, err, ErrSensitiveUnsealed)
	otherKey, err := NewAEADSealer([]byte("another key of thirty-two bytes!"))
	require.NoError(t, err)
	_, err = JournalCodec{Sealer: otherKey}.Decode(data)
	require.Error(t, err, "another key opens nothing")
}

func TestJournalRefusesAnotherVersion(t *testing.T) {
	data, _, err := EncodeJournal(JournalRecord{Event: wrote(alice, "one")})
	require.NoError(t, err)
	var raw map[string]any
	require.NoError(t, json.Unmarshal(data, &raw))
	raw["v"] = JournalVersion + 1
	newer, err := json.Marshal(raw)
	require.NoError(t, err)
	_, err = DecodeJournal(newer)
	require.ErrorContains(t, err, "version 2")
	_, err = DecodeJournal([]byte(`{"v":1}`))
	require.ErrorContains(t, err, "no event")
}
