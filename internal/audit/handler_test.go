package audit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/audit"
	"github.com/configbutler/gitops-reverser/internal/facts"
)

// recordingTransport records every Publish; a stream in fail is refused.
type recordingTransport struct {
	mu        sync.Mutex
	published []published
	fail      map[facts.StreamKey]bool
}

type published struct {
	stream facts.StreamKey
	facts  []facts.Fact
}

func (t *recordingTransport) Publish(_ context.Context, stream facts.StreamKey, fs []facts.Fact) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.fail[stream] {
		return errors.New("the stream is down")
	}
	t.published = append(t.published, published{stream: stream, facts: fs})
	return nil
}

func (t *recordingTransport) Follow(ctx context.Context, _ facts.StreamKey, _ time.Time, _ func([]facts.Fact), _ func(int)) error {
	<-ctx.Done()
	return ctx.Err()
}

// auditIDs are the audit ids of each Publish, in order; a fact published
// to a stream not its own is listed as "misfiled".
func (t *recordingTransport) auditIDs() map[facts.StreamKey][][]string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[facts.StreamKey][][]string{}
	for _, p := range t.published {
		var ids []string
		for _, f := range p.facts {
			if f.Stream != p.stream {
				ids = append(ids, "misfiled")
				continue
			}
			ids = append(ids, f.AuditID)
		}
		out[p.stream] = append(out[p.stream], ids)
	}
	return out
}

// recordingObserver counts what the handler reports.
type recordingObserver struct {
	mu       sync.Mutex
	events   map[facts.Outcome][]audit.EventLabels
	unrouted map[audit.UnroutedReason]int
	lists    []listReport
	delays   []time.Duration
}

type listReport struct {
	outcome audit.ListOutcome
	events  int
}

func newObserver() *recordingObserver {
	return &recordingObserver{events: map[facts.Outcome][]audit.EventLabels{}, unrouted: map[audit.UnroutedReason]int{}}
}

func (o *recordingObserver) Event(labels audit.EventLabels, outcome facts.Outcome) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.events[outcome] = append(o.events[outcome], labels)
}

func (o *recordingObserver) Unrouted(reason audit.UnroutedReason) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.unrouted[reason]++
}

func (o *recordingObserver) FactDelay(delay time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.delays = append(o.delays, delay)
}

func (o *recordingObserver) EventList(outcome audit.ListOutcome, events int, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.lists = append(o.lists, listReport{outcome: outcome, events: events})
}

// outcomes counts the events reported per outcome.
func (o *recordingObserver) outcomes() map[facts.Outcome]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[facts.Outcome]int{}
	for outcome, labels := range o.events {
		out[outcome] = len(labels)
	}
	return out
}

var knownRoutes = func(route string) bool { return route == "prod" || route == "staging" }

func newHandler(t testing.TB, transport facts.Transport, observer audit.Observer, mutate ...func(*audit.HandlerOptions)) *audit.Handler {
	t.Helper()
	opts := audit.HandlerOptions{Transport: transport, KnownRoute: knownRoutes, Observer: observer}
	for _, m := range mutate {
		m(&opts)
	}
	h, err := audit.NewHandler(opts)
	require.NoError(t, err)
	return h
}

// capturedItems are the raw events the real API server sent for the named
// scenarios (internal/facts/testdata/audit), in order.
func capturedItems(t testing.TB, scenarios ...string) []json.RawMessage {
	t.Helper()
	var items []json.RawMessage
	for _, scenario := range scenarios {
		body, err := os.ReadFile(filepath.Join("..", "facts", "testdata", "audit", scenario+".json"))
		require.NoError(t, err)
		var list struct {
			Items []json.RawMessage `json:"items"`
		}
		require.NoError(t, json.Unmarshal(body, &list))
		items = append(items, list.Items...)
	}
	return items
}

func eventList(t testing.TB, items []json.RawMessage) []byte {
	t.Helper()
	body, err := json.Marshal(map[string]any{"kind": "EventList", "apiVersion": "audit.k8s.io/v1", "metadata": map[string]any{}, "items": items})
	require.NoError(t, err)
	return body
}

func post(h http.Handler, path string, body []byte) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body)))
	return rec
}

// auditID reads the audit id of a captured scenario's ResponseComplete.
func auditID(t *testing.T, scenario string) string {
	t.Helper()
	var ev struct {
		AuditID string `json:"auditID"`
	}
	require.NoError(t, json.Unmarshal(capturedItems(t, scenario)[1], &ev))
	return ev.AuditID
}

var (
	configMaps  = facts.StreamKey{Route: "prod", Resource: "configmaps"}
	deployments = facts.StreamKey{Route: "prod", Group: "apps", Resource: "deployments"}
)

// TestMixedEventListPublishesTheAcceptedFactsOncePerStream: a batch of
// real events, accepted and rejected, interleaved over two types, is one
// Publish per type carrying exactly the accepted facts in event order, and
// every event is counted once.
func TestMixedEventListPublishesTheAcceptedFactsOncePerStream(t *testing.T) {
	scenarios := []string{"create", "read", "update", "scale", "update_noop", "create_dry_run", "status_update", "delete", "deletecollection"}
	transport, observer := &recordingTransport{}, newObserver()
	h := newHandler(t, transport, observer)

	rec := post(h, "/audit-webhook/prod", eventList(t, capturedItems(t, scenarios...)))
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())

	require.Equal(t, map[facts.StreamKey][][]string{
		configMaps:  {{auditID(t, "create"), auditID(t, "update"), auditID(t, "delete"), auditID(t, "deletecollection")}},
		deployments: {{auditID(t, "scale")}},
	}, transport.auditIDs())
	require.Equal(t, map[facts.Outcome]int{
		facts.OutcomeStage:                    len(scenarios), // every RequestReceived
		facts.OutcomeQueued:                   5,
		facts.OutcomeReadOnlyOrUnknownVerb:    1,
		facts.OutcomeUnchangedResourceVersion: 1,
		facts.OutcomeDryRun:                   1,
		facts.OutcomeNonScaleSubresource:      1,
	}, observer.outcomes())
	require.Equal(t, []listReport{{outcome: audit.ListOK, events: 2 * len(scenarios)}}, observer.lists)
	require.Contains(t, observer.events[facts.OutcomeQueued], audit.EventLabels{Group: "apps", Version: "v1", Resource: "deployments", Verb: "update"})
	require.Contains(t, observer.events[facts.OutcomeReadOnlyOrUnknownVerb], audit.EventLabels{Version: "v1", Resource: "configmaps", Verb: "get"})
	require.Len(t, observer.delays, 5, "each accepted event's delay since its stage time is reported")
	for _, d := range observer.delays {
		require.Positive(t, d, "the captured events were staged before now")
	}
}

// TestRequestsThatAreNotEventListsAreRefusedAndCounted: every refusal
// has its status and outcome, and publishes nothing.
func TestRequestsThatAreNotEventListsAreRefusedAndCounted(t *testing.T) {
	valid := eventList(t, capturedItems(t, "create"))
	cases := []struct {
		name    string
		method  string
		path    string
		body    []byte
		status  int
		outcome audit.ListOutcome
	}{
		{name: "malformed JSON", path: "/audit-webhook/prod", body: []byte(`{"kind":"EventList",`), status: http.StatusBadRequest, outcome: audit.ListMalformed},
		{name: "not an EventList", path: "/audit-webhook/prod", body: []byte(`{"kind":"Pod","apiVersion":"v1"}`), status: http.StatusBadRequest, outcome: audit.ListMalformed},
		{name: "an empty body", path: "/audit-webhook/prod", status: http.StatusBadRequest, outcome: audit.ListMalformed},
		{name: "over the size bound", path: "/audit-webhook/prod", body: bytes.Repeat([]byte(" "), 4097), status: http.StatusRequestEntityTooLarge, outcome: audit.ListTooLarge},
		{name: "a valid list over the size bound", path: "/audit-webhook/prod", body: append(valid, bytes.Repeat([]byte(" "), 4096)...), status: http.StatusRequestEntityTooLarge, outcome: audit.ListTooLarge},
		{name: "a GET", method: http.MethodGet, path: "/audit-webhook/prod", status: http.StatusMethodNotAllowed, outcome: audit.ListMethodNotAllowed},
		{name: "a route no provider has", path: "/audit-webhook/dev", body: valid, status: http.StatusNotFound, outcome: audit.ListUnknownRoute},
		{name: "a route that is not a DNS label", path: "/audit-webhook/Prod_1", body: valid, status: http.StatusNotFound, outcome: audit.ListNotFound},
		{name: "a deeper path", path: "/audit-webhook/prod/x", body: valid, status: http.StatusNotFound, outcome: audit.ListNotFound},
		{name: "an empty route", path: "/audit-webhook/", body: valid, status: http.StatusNotFound, outcome: audit.ListNotFound},
		{name: "another path", path: "/validate", body: valid, status: http.StatusNotFound, outcome: audit.ListNotFound},
		{name: "the shared endpoint without annotation routing", path: "/audit-webhook", body: valid, status: http.StatusNotFound, outcome: audit.ListNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			transport, observer := &recordingTransport{}, newObserver()
			h := newHandler(t, transport, observer, func(o *audit.HandlerOptions) { o.MaxBodyBytes = 4096 })
			method := tc.method
			if method == "" {
				method = http.MethodPost
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(method, tc.path, bytes.NewReader(tc.body)))
			require.Equal(t, tc.status, rec.Code, rec.Body.String())
			require.Equal(t, []listReport{{outcome: tc.outcome}}, observer.lists)
			require.Empty(t, observer.outcomes())
			require.Empty(t, transport.auditIDs())
			if tc.status == http.StatusMethodNotAllowed {
				require.Equal(t, http.MethodPost, rec.Header().Get("Allow"))
			}
		})
	}
	require.Less(t, int64(len(valid)), int64(4096), "the valid list fits the bound by itself")
}

// TestSharedEndpointRoutesEachEventByItsAnnotation: on the bare endpoint
// each event's annotation picks its stream; one naming no route, or a route
// no provider has, is dropped and counted; a rejected event is counted by
// its gate outcome whatever it names.
func TestSharedEndpointRoutesEachEventByItsAnnotation(t *testing.T) {
	const key = "example.com/audit-route"
	items := capturedItems(t, "create", "update", "delete", "read")
	route := func(item json.RawMessage, route string) json.RawMessage {
		var ev map[string]any
		require.NoError(t, json.Unmarshal(item, &ev))
		ev["annotations"] = map[string]string{key: route}
		out, err := json.Marshal(ev)
		require.NoError(t, err)
		return out
	}
	body := eventList(t, []json.RawMessage{
		route(items[1], "prod"),    // create
		route(items[3], "staging"), // update
		items[5],                   // delete, no annotation
		route(items[5], "dev"),     // delete, unknown route
		route(items[5], "Not A Label"),
		route(items[7], "prod"), // read
	})
	transport, observer := &recordingTransport{}, newObserver()
	h := newHandler(t, transport, observer, func(o *audit.HandlerOptions) { o.RouteAnnotationKey = key })

	rec := post(h, "/audit-webhook", body)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.Equal(t, map[facts.StreamKey][][]string{
		configMaps: {{auditID(t, "create")}},
		{Route: "staging", Resource: "configmaps"}: {{auditID(t, "update")}},
	}, transport.auditIDs())
	require.Equal(t, map[facts.Outcome]int{facts.OutcomeQueued: 2, facts.OutcomeNoAttributionFact: 3, facts.OutcomeReadOnlyOrUnknownVerb: 1},
		observer.outcomes())
	require.Equal(t, map[audit.UnroutedReason]int{audit.UnroutedMissingRoute: 2, audit.UnroutedUnknownRoute: 1}, observer.unrouted)
}

// TestFailedPublishIsAnsweredSoTheAPIServerRetries: a stream that cannot
// be written makes its events write errors and the request a 503; the
// other stream's facts are still published.
func TestFailedPublishIsAnsweredSoTheAPIServerRetries(t *testing.T) {
	transport := &recordingTransport{fail: map[facts.StreamKey]bool{configMaps: true}}
	observer := newObserver()
	h := newHandler(t, transport, observer)

	rec := post(h, "/audit-webhook/prod", eventList(t, capturedItems(t, "create", "scale", "update")))
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	require.Equal(t, map[facts.StreamKey][][]string{deployments: {{auditID(t, "scale")}}}, transport.auditIDs())
	require.Equal(t, map[facts.Outcome]int{facts.OutcomeStage: 3, facts.OutcomeWriteError: 2, facts.OutcomeQueued: 1}, observer.outcomes())
	require.Equal(t, []listReport{{outcome: audit.ListWriteError, events: 6}}, observer.lists)
}

// blockedFollowerTransport hands every publish to one follower whose
// deliver blocks until released, the way a stalled watch side would.
type blockedFollowerTransport struct {
	mu      sync.Mutex
	pending [][]facts.Fact
	wake    chan struct{}
}

func (t *blockedFollowerTransport) Publish(_ context.Context, _ facts.StreamKey, fs []facts.Fact) error {
	t.mu.Lock()
	t.pending = append(t.pending, fs)
	t.mu.Unlock()
	select {
	case t.wake <- struct{}{}:
	default:
	}
	return nil
}

func (t *blockedFollowerTransport) Follow(ctx context.Context, _ facts.StreamKey, _ time.Time, deliver func([]facts.Fact), _ func(int)) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.wake:
		}
		t.mu.Lock()
		batches := t.pending
		t.pending = nil
		t.mu.Unlock()
		for _, b := range batches {
			deliver(b)
		}
	}
}

// TestHandlerAnswersWithoutWaitingForTheFollower: while the follower is
// stuck delivering the first request's facts, later requests are still
// answered 200.
func TestHandlerAnswersWithoutWaitingForTheFollower(t *testing.T) {
	transport := &blockedFollowerTransport{wake: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	delivered, release := make(chan []facts.Fact), make(chan struct{})
	go func() {
		_ = transport.Follow(ctx, configMaps, time.Time{}, func(fs []facts.Fact) {
			delivered <- fs
			<-release
		}, nil)
	}()
	h := newHandler(t, transport, newObserver())

	require.Equal(t, http.StatusOK, post(h, "/audit-webhook/prod", eventList(t, capturedItems(t, "create"))).Code)
	first := <-delivered // the follower now blocks in deliver
	require.Equal(t, auditID(t, "create"), first[0].AuditID)
	for _, scenario := range []string{"update", "merge_patch", "delete"} {
		rec := post(h, "/audit-webhook/prod", eventList(t, capturedItems(t, scenario)))
		require.Equal(t, http.StatusOK, rec.Code, "answered while the follower is blocked")
	}
	close(release)
	var later []string
	for len(later) < 3 {
		for _, f := range <-delivered {
			later = append(later, f.AuditID)
		}
	}
	require.Equal(t, []string{auditID(t, "update"), auditID(t, "merge_patch"), auditID(t, "delete")}, later)
}

func TestNewHandlerNeedsATransportAndRoutes(t *testing.T) {
	_, err := audit.NewHandler(audit.HandlerOptions{KnownRoute: knownRoutes})
	require.ErrorContains(t, err, "transport")
	_, err = audit.NewHandler(audit.HandlerOptions{Transport: &recordingTransport{}})
	require.ErrorContains(t, err, "KnownRoute")
}

// TestUnknownVerbsShareOneLabel: a verb outside the known set is counted
// as "other", so a sender cannot grow the label set.
func TestUnknownVerbsShareOneLabel(t *testing.T) {
	observer := newObserver()
	h := newHandler(t, &recordingTransport{}, observer)
	body := `{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[` +
		`{"stage":"ResponseComplete","verb":"x-anything","responseStatus":{"code":200}},{"stage":"ResponseComplete","verb":"post"}]}`
	require.Equal(t, http.StatusOK, post(h, "/audit-webhook/prod", []byte(body)).Code)
	require.Equal(t, []audit.EventLabels{{Verb: "other"}, {Verb: "other"}}, observer.events[facts.OutcomeReadOnlyOrUnknownVerb])
}
