package observer

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/configbutler/gitops-reverser/internal/facts/memory"
)

// BenchmarkHandlerUpdate is the observer's own share of a reviewed write:
// an UPDATE review of a ConfigMap with 4 KiB of data read, reduced to a
// fact (the digest of the object among it) and published to the
// in-process transport. The API server's call and TLS are not in it.
func BenchmarkHandlerUpdate(b *testing.B) {
	value := strings.Repeat("x", 4096)
	req := request(admissionv1.Update, configMapJSON("web", "uid-1", "41", value), configMapJSON("web", "uid-1", "40", "old"))
	raw, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Request: req})
	if err != nil {
		b.Fatal(err)
	}
	body := string(raw)
	h, err := NewHandler(HandlerOptions{Transport: memory.New(memory.Options{Retention: time.Minute}),
		Routes: func(context.Context) ([]string, error) { return []string{"default"}, nil }})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, Path, strings.NewReader(body)))
		if rec.Code != http.StatusOK {
			b.Fatal(rec.Code)
		}
	}
}
