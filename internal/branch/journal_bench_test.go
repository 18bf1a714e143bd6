package branch

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkRestoreJournal: a new owner decoding a 10,000-entry journal
// (100 windows of 100 writes, two authors taking turns) and stepping it
// into a fresh core.
func BenchmarkRestoreJournal(b *testing.B) {
	source := testCore(nil)
	var stored [][]byte
	for i := range 10000 {
		author := alice
		if i/100%2 == 1 {
			author = bob
		}
		at := t0.Add(time.Duration(i) * time.Millisecond)
		ev := WriteEvent{Target: coreTo, Author: author, Write: change(fmt.Sprintf("cm-%d", i%500))}
		source.Step(at, ev)
		data, _, err := EncodeJournal(JournalRecord{At: at, Window: source.LastWindow(), Event: ev})
		if err != nil {
			b.Fatal(err)
		}
		stored = append(stored, data)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		items := make([]JournalItem, len(stored))
		for i, data := range stored {
			rec, err := DecodeJournal(data)
			if err != nil {
				b.Fatal(err)
			}
			items[i] = JournalItem{ID: fmt.Sprint(i, "-0"), Record: rec}
		}
		restored := testCore(nil)
		index, _ := RestoreJournal(restored, items)
		if len(index.Marks) != len(stored) || len(restored.held()) != 100 {
			b.Fatal(len(index.Marks), len(restored.held()))
		}
	}
}
