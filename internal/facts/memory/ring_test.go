package memory

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/facts"
	"github.com/configbutler/gitops-reverser/internal/facts/factstest"
)

// The ring keeps its order through every mix of growing, wrapping and
// trimming by time, and numbers facts so that first..next are the ones it
// holds.
func TestRingKeepsOrderAcrossGrowWrapAndTrim(t *testing.T) {
	t0 := time.Date(2026, 6, 30, 12, 0, 0, 0, time.UTC)
	type op struct {
		push     int // push this many, each one second after the last
		trimUpTo int // then drop those published before second trimUpTo
	}
	for _, tc := range []struct {
		name      string
		max       int
		ops       []op
		wantFirst uint64
		want      []string
	}{
		{"grows", 8, []op{{push: 3}}, 0, []string{"f0", "f1", "f2"}},
		{"wraps when full", 4, []op{{push: 6}}, 2, []string{"f2", "f3", "f4", "f5"}},
		{"trims from the old end", 8, []op{{push: 5, trimUpTo: 3}}, 3, []string{"f3", "f4"}},
		{"grows after a trim moved the head", 8,
			[]op{{push: 4, trimUpTo: 2}, {push: 5}}, 2, []string{"f2", "f3", "f4", "f5", "f6", "f7", "f8"}},
		{"trims everything, then refills", 3,
			[]op{{push: 5, trimUpTo: 10}, {push: 2}}, 5, []string{"f5", "f6"}},
		{"wraps after growing around a moved head", 4,
			[]op{{push: 3, trimUpTo: 1}, {push: 4}}, 3, []string{"f3", "f4", "f5", "f6"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ring{max: tc.max}
			n := 0
			for _, o := range tc.ops {
				for range o.push {
					r.push(entry{fact: facts.Fact{AuditID: fmt.Sprintf("f%d", n)}, at: t0.Add(time.Duration(n) * time.Second)})
					n++
				}
				if o.trimUpTo > 0 {
					r.dropBefore(t0.Add(time.Duration(o.trimUpTo) * time.Second))
				}
			}
			require.Equal(t, tc.wantFirst, r.first)
			require.Equal(t, uint64(n), r.next)
			require.Equal(t, tc.want, factstest.AuditIDs(r.from(r.first)))
			require.LessOrEqual(t, len(r.buf), tc.max)
			if len(tc.want) > 0 {
				second := r.first + 1
				require.Equal(t, second, r.firstAtOrAfter(r.at(second).at))
			}
		})
	}
}
