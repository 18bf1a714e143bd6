package observer

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/configbutler/gitops-reverser/internal/facts"
	"github.com/configbutler/gitops-reverser/internal/facts/factstest"
	"github.com/configbutler/gitops-reverser/internal/facts/memory"
	"github.com/configbutler/gitops-reverser/internal/sanitize"
)

var received = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

func configMapJSON(name, uid, rv, value string) []byte {
	meta := map[string]any{"name": name, "namespace": "team-a", "uid": uid}
	if rv != "" {
		meta["resourceVersion"] = rv
	}
	b, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta,
		"data": map[string]any{"v": value}})
	if err != nil {
		panic(err)
	}
	return b
}

func request(op admissionv1.Operation, object, old []byte) *admissionv1.AdmissionRequest {
	return &admissionv1.AdmissionRequest{
		UID:       "review-1",
		Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "configmaps"},
		Namespace: "team-a", Operation: op,
		UserInfo: authnv1.UserInfo{Username: "alice", Groups: []string{"devs"}, Extra: map[string]authnv1.ExtraValue{
			facts.ExtraDisplayName: {"Alice Example"}, facts.ExtraEmail: {"alice@example.com"}}},
		Object:    runtime.RawExtension{Raw: object},
		OldObject: runtime.RawExtension{Raw: old},
	}
}

func digestOf(t *testing.T, raw []byte) string {
	t.Helper()
	var obj unstructured.Unstructured
	require.NoError(t, obj.UnmarshalJSON(raw))
	return sanitize.Digest(&obj)
}

func TestFactOfEachOperation(t *testing.T) {
	alice := facts.Actor{Username: "alice", Groups: []string{"devs"}, DisplayName: "Alice Example", Email: "alice@example.com"}
	created := configMapJSON("web", "uid-1", "", "1")
	updated := configMapJSON("web", "uid-1", "41", "2")
	old := configMapJSON("web", "uid-1", "40", "1")
	base := facts.Fact{AuditID: "review-1", Stream: facts.StreamKey{Resource: "configmaps"}, Version: "v1",
		Namespace: "team-a", Name: "web", UID: "uid-1", Actor: alice, Stage: received, Source: facts.SourceAdmission}

	tests := []struct {
		name string
		req  *admissionv1.AdmissionRequest
		want func(f *facts.Fact)
	}{
		{"create", request(admissionv1.Create, created, nil), func(f *facts.Fact) {
			f.Verb, f.Digest = "create", digestOf(t, created)
		}},
		{"update names the version it was made against", request(admissionv1.Update, updated, old), func(f *facts.Fact) {
			f.Verb, f.PreviousVersion, f.Digest = "update", "40", digestOf(t, updated)
		}},
		{"delete names the old object", request(admissionv1.Delete, nil, old), func(f *facts.Fact) { f.Verb = "delete" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := base
			tt.want(&want)
			got, outcome := FactOf(tt.req, received, false)
			require.Equal(t, OutcomeQueued, outcome)
			require.Equal(t, want, got)
		})
	}
}

// A Secret's fact carries no digest: the fact store would otherwise hold
// a hash of its plaintext, against which a short value can be guessed.
func TestFactOfASensitiveTypeCarriesNoDigest(t *testing.T) {
	for _, op := range []admissionv1.Operation{admissionv1.Create, admissionv1.Update} {
		req := request(op, configMapJSON("db", "uid-9", "41", "hunter2"), configMapJSON("db", "uid-9", "40", "x"))
		got, outcome := FactOf(req, received, true)
		require.Equal(t, OutcomeQueued, outcome)
		require.Equal(t, "uid-9", got.UID)
		require.Empty(t, got.Digest, "%s of a sensitive type", op)
	}
}

func TestFactOfAScaleNamesItsParentWithoutADigest(t *testing.T) {
	scale := func(rv string, replicas int) []byte {
		b, err := json.Marshal(map[string]any{"apiVersion": "autoscaling/v1", "kind": "Scale",
			"metadata": map[string]any{"name": "web", "namespace": "team-a", "uid": "dep-uid", "resourceVersion": rv},
			"spec":     map[string]any{"replicas": replicas}})
		require.NoError(t, err)
		return b
	}
	req := request(admissionv1.Update, scale("7", 3), scale("7", 2))
	req.Resource = metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	req.SubResource, req.Name = "scale", "web"
	got, outcome := FactOf(req, received, false)
	require.Equal(t, OutcomeQueued, outcome)
	require.Equal(t, facts.StreamKey{Group: "apps", Resource: "deployments"}, got.Stream)
	require.Equal(t, "scale", got.Subresource)
	require.Equal(t, "dep-uid", got.UID)
	require.Equal(t, "7", got.PreviousVersion)
	require.Empty(t, got.Digest)
}

func TestFactOfRefusesWhatNamesNoPersistedWrite(t *testing.T) {
	dry := true
	dryRun := request(admissionv1.Create, configMapJSON("web", "uid-1", "", "1"), nil)
	dryRun.DryRun = &dry
	status := request(admissionv1.Update, configMapJSON("web", "uid-1", "", "1"), configMapJSON("web", "uid-1", "3", "1"))
	status.SubResource = "status"
	noUID := request(admissionv1.Create, configMapJSON("web", "", "", "1"), nil)
	garbage := request(admissionv1.Update, []byte(`[1,2]`), configMapJSON("web", "uid-1", "3", "1"))
	for name, tt := range map[string]struct {
		req  *admissionv1.AdmissionRequest
		want Outcome
	}{
		"dry run":            {dryRun, OutcomeDryRun},
		"connect":            {request(admissionv1.Connect, nil, nil), OutcomeIgnoredOperation},
		"status":             {status, OutcomeNonScaleSubresource},
		"no uid":             {noUID, OutcomeNoAttributionFact},
		"object not an obj":  {garbage, OutcomeNoAttributionFact},
		"delete without old": {request(admissionv1.Delete, nil, nil), OutcomeNoAttributionFact},
	} {
		t.Run(name, func(t *testing.T) {
			_, outcome := FactOf(tt.req, received, false)
			require.Equal(t, tt.want, outcome)
		})
	}
}

type countingObserver map[Outcome]int

func (c countingObserver) Reviewed(_ string, outcome Outcome) { c[outcome]++ }

func newTestHandler(t *testing.T, routes ...string) (*Handler, *memory.Transport, countingObserver) {
	t.Helper()
	tr := memory.New(memory.Options{Retention: time.Minute})
	counts := countingObserver{}
	h, err := NewHandler(HandlerOptions{Transport: tr, Observer: counts, Now: func() time.Time { return received },
		Routes: func(context.Context) ([]string, error) { return routes, nil }})
	require.NoError(t, err)
	return h, tr, counts
}

func post(h http.Handler, body string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, Path, strings.NewReader(body)))
	return rec
}

func reviewBody(t *testing.T, req *admissionv1.AdmissionRequest) string {
	t.Helper()
	b, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Request: req})
	require.NoError(t, err)
	return string(b)
}

func TestTheHandlerAllowsAndPublishesToEveryLocalRoute(t *testing.T) {
	h, tr, counts := newTestHandler(t, "local", "local-2")
	rec := post(h, reviewBody(t, request(admissionv1.Create, configMapJSON("web", "uid-1", "", "1"), nil)))
	require.Equal(t, http.StatusOK, rec.Code)
	var answer admissionv1.AdmissionReview
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &answer))
	require.Equal(t, "AdmissionReview", answer.Kind)
	require.True(t, answer.Response.Allowed)
	require.Equal(t, "review-1", string(answer.Response.UID))
	require.Equal(t, 1, counts[OutcomeQueued])
	for _, route := range []string{"local", "local-2"} {
		key := facts.StreamKey{Route: route, Resource: "configmaps"}
		got := factstest.Follow(t, tr, key, time.Time{}).Until(t, "review-1")
		require.Len(t, got, 1)
		require.Equal(t, key, got[0].Stream)
		require.Equal(t, "alice", got[0].Actor.Username)
	}
}

func TestTheHandlerAllowsADryRunAndPublishesNothing(t *testing.T) {
	h, _, counts := newTestHandler(t, "local")
	dry := true
	req := request(admissionv1.Create, configMapJSON("web", "uid-1", "", "1"), nil)
	req.DryRun = &dry
	rec := post(h, reviewBody(t, req))
	require.Equal(t, http.StatusOK, rec.Code)
	require.Contains(t, rec.Body.String(), `"allowed":true`)
	require.Equal(t, countingObserver{OutcomeDryRun: 1}, counts)
}

func TestTheHandlerAnswersAMalformedReview400AndCountsIt(t *testing.T) {
	h, _, counts := newTestHandler(t, "local")
	for name, body := range map[string]string{
		"not json":      "{",
		"no request":    `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`,
		"no uid":        `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"operation":"CREATE"}}`,
		"other version": `{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"x"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, http.StatusBadRequest, post(h, body).Code)
		})
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, Path, nil))
	require.Equal(t, http.StatusMethodNotAllowed, rec.Code)
	require.Equal(t, countingObserver{OutcomeMalformed: 5}, counts)
}

type failingTransport struct{ facts.Transport }

func (failingTransport) Publish(context.Context, facts.StreamKey, []facts.Fact) error {
	return context.DeadlineExceeded
}

func TestAFailedPublishStillAllowsTheWrite(t *testing.T) {
	counts := countingObserver{}
	h, err := NewHandler(HandlerOptions{Transport: failingTransport{}, Observer: counts,
		Routes: func(context.Context) ([]string, error) { return []string{"local"}, nil }})
	require.NoError(t, err)
	rec := post(h, reviewBody(t, request(admissionv1.Create, configMapJSON("web", "uid-1", "", "1"), nil)))
	require.Equal(t, http.StatusOK, rec.Code)
	require.Contains(t, rec.Body.String(), `"allowed":true`)
	require.Equal(t, countingObserver{OutcomeWriteError: 1}, counts)
}

// With Local, each fact is filed in the process's own index before the
// review is answered, besides being published: by the time the API server
// stores the write, the review is there to be confirmed.
func TestTheHandlerFilesEachFactLocallyBeforeItAnswers(t *testing.T) {
	var filed []facts.Fact
	h, err := NewHandler(HandlerOptions{Transport: memory.New(memory.Options{Retention: time.Minute}),
		Local:  func(key facts.StreamKey, fs []facts.Fact) { filed = append(filed, fs...) },
		Routes: func(context.Context) ([]string, error) { return []string{"local"}, nil }})
	require.NoError(t, err)
	rec := post(h, reviewBody(t, request(admissionv1.Create, configMapJSON("web", "uid-1", "", "1"), nil)))
	require.Equal(t, http.StatusOK, rec.Code)
	require.Len(t, filed, 1, "filed before the answer was written")
	require.Equal(t, facts.StreamKey{Route: "local", Resource: "configmaps"}, filed[0].Stream)
	require.Equal(t, "review-1", filed[0].AuditID)
}
