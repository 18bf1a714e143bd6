package audit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/configbutler/gitops-reverser/internal/facts"
)

// discardTransport publishes nowhere.
type discardTransport struct{ recordingTransport }

func (*discardTransport) Publish(context.Context, facts.StreamKey, []facts.Fact) error { return nil }

// BenchmarkHandler is the ingress on one goroutine: a 400-event batch (the
// API server's default batch size) of real events, half accepted, through
// parse, gate, extraction and a no-op publish. It reports events/s; the
// issue's target is 20,000 on one core.
func BenchmarkHandler(b *testing.B) {
	var items []json.RawMessage
	for len(items) < 400 {
		items = append(items, capturedItems(b, "create", "update", "merge_patch", "delete")...)
	}
	body := eventList(b, items[:400])
	h := newHandler(b, &discardTransport{}, nil)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	b.ResetTimer()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/audit-webhook/prod", bytes.NewReader(body)))
		if rec.Code != http.StatusOK {
			b.Fatal(rec.Code)
		}
	}
	b.ReportMetric(float64(400*b.N)/b.Elapsed().Seconds(), "events/s")
}
