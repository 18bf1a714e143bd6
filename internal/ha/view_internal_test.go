package ha

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLiveMembers(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const renew, lease = 10 * time.Second, 15 * time.Second
	renewed := selfState{renewed: true, lastRenew: t0}
	seenAt := func(member string, at time.Time) observation {
		return observation{member: member, renewal: at.String(), firstSeen: at, duration: lease}
	}
	others := map[string]observation{
		"g-pod-b": seenAt("pod-b", t0),
		"g-pod-c": seenAt("pod-c", t0.Add(5*time.Second)),
		"g-pod-a": seenAt("pod-a", t0.Add(-time.Hour)), // our own Lease as the informer saw it: ignored
	}
	tests := []struct {
		name string
		now  time.Time
		self selfState
		want []string
		next time.Time
	}{
		{name: "all live", now: t0.Add(time.Second), self: renewed,
			want: []string{"pod-a", "pod-b", "pod-c"}, next: t0.Add(renew)},
		{name: "self fenced at RenewDeadline, before the others expire it", now: t0.Add(renew), self: renewed,
			want: []string{"pod-b", "pod-c"}, next: t0.Add(lease)},
		{name: "b expired by our clock", now: t0.Add(lease), self: selfState{renewed: true, lastRenew: t0.Add(lease)},
			want: []string{"pod-a", "pod-c"}, next: t0.Add(5*time.Second + lease)},
		{name: "never renewed", now: t0, self: selfState{},
			want: []string{"pod-b", "pod-c"}, next: t0.Add(lease)},
		{name: "suspended", now: t0, self: selfState{renewed: true, lastRenew: t0, suspended: true},
			want: []string{"pod-b", "pod-c"}, next: t0.Add(lease)},
		{name: "left", now: t0, self: selfState{renewed: true, lastRenew: t0, left: true},
			want: []string{"pod-b", "pod-c"}, next: t0.Add(lease)},
		{name: "everyone gone", now: t0.Add(time.Hour), self: renewed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, next := liveMembers(tc.now, "pod-a", tc.self, renew, others)
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.next, next, "the next time the answer can change")
		})
	}
}

func TestDiffSaysWhoLeftAndWhy(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	seen := func(string) time.Time { return t0 }
	prev := []string{"pod-a", "pod-b", "pod-c"}
	tests := []struct {
		name   string
		next   []string
		self   selfState
		gone   map[string]bool
		joined []string
		left   []Departure
	}{
		{name: "expired", next: []string{"pod-a", "pod-c"},
			left: []Departure{{Member: "pod-b", Cause: CauseMemberLost, LastRenewed: t0}}},
		{name: "deleted its Lease", next: []string{"pod-a", "pod-c"}, gone: map[string]bool{"pod-b": true},
			left: []Departure{{Member: "pod-b", Cause: CauseGraceful, LastRenewed: t0}}},
		{name: "self suspended", next: []string{"pod-b", "pod-c"}, self: selfState{suspended: true},
			left: []Departure{{Member: "pod-a", Cause: CauseRedisLost, LastRenewed: t0}}},
		{name: "self left", next: []string{"pod-b", "pod-c"}, self: selfState{left: true},
			left: []Departure{{Member: "pod-a", Cause: CauseGraceful, LastRenewed: t0}}},
		{name: "self fenced", next: []string{"pod-b", "pod-c"},
			left: []Departure{{Member: "pod-a", Cause: CauseMemberLost, LastRenewed: t0}}},
		{name: "joined", next: []string{"pod-a", "pod-b", "pod-c", "pod-d"}, joined: []string{"pod-d"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			joined, left := diff(prev, tc.next, "pod-a", tc.self, tc.gone, seen)
			require.Equal(t, tc.joined, joined)
			require.Equal(t, tc.left, left)
		})
	}
}

func TestCollectable(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const lease, after = 15 * time.Second, time.Minute
	observed := map[string]observation{
		"g-pod-old":   {member: "pod-old", firstSeen: t0.Add(-time.Hour), duration: lease},
		"g-pod-dead":  {member: "pod-dead", firstSeen: t0.Add(-lease - after), duration: lease},
		"g-pod-young": {member: "pod-young", firstSeen: t0.Add(-lease - after + time.Second), duration: lease},
		"g-pod-a":     {member: "pod-a", firstSeen: t0.Add(-time.Hour), duration: lease},
	}
	collector := View{Version: 1, Self: "pod-a", SelfLive: true, Members: []string{"pod-a", "pod-b"}}
	require.Equal(t, []string{"g-pod-old", "g-pod-dead"}, collectable(t0, collector, observed, after),
		"dead for CollectAfter, oldest first, never our own")
	notFirst := View{Version: 1, Self: "pod-b", SelfLive: true, Members: []string{"pod-a", "pod-b"}}
	require.Empty(t, collectable(t0, notFirst, observed, after), "only the first live member collects")
	fenced := View{Version: 1, Self: "pod-a", Members: []string{"pod-b"}}
	require.Empty(t, collectable(t0, fenced, observed, after), "a fenced replica writes nothing")
}
