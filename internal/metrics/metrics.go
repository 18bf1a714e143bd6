// Package metrics defines the operator's Prometheus families and implements
// the observer interfaces of the watch streams, target mirrors and branch
// workers on top of them.
package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apiwatch "k8s.io/apimachinery/pkg/watch"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/branch"
	"github.com/configbutler/gitops-reverser/internal/manifest"
	"github.com/configbutler/gitops-reverser/internal/watch"
)

const namespace = "gitopsreverser"

// Metrics holds every family. Build it with New and register it once.
//
// A family is only scraped once it has a series, so every series whose
// labels are known is set to zero as early as they are known: the refusal
// reasons in New, a worker's series when it first reports its queue, a
// stream's when its first replay starts, a target's when it first forwards
// or finishes its replay. Dashboards and alerts then see zeros, not gaps.
type Metrics struct {
	// workersSeen are the workers whose series exist.
	workersSeen sync.Map // branch.Key → struct{}

	commits           *prometheus.CounterVec
	objectsWritten    *prometheus.CounterVec
	queueDepth        *prometheus.GaugeVec
	sweepDeletes      *prometheus.CounterVec
	conflicts         *prometheus.CounterVec
	outcomeWaits      *prometheus.CounterVec
	commitDuration    *prometheus.HistogramVec
	eventToCommit     *prometheus.HistogramVec
	requestsPerCommit *prometheus.HistogramVec
	refusals          *prometheus.CounterVec
	placements        *prometheus.CounterVec
	forwarded         *prometheus.CounterVec
	watchEvents       *prometheus.CounterVec
	watchReplays      *prometheus.CounterVec
	watchReconnects   *prometheus.CounterVec
	watchGone         *prometheus.CounterVec
	watchResumes      *prometheus.CounterVec
	watchColdReplays  *prometheus.CounterVec
}

// workerLabels name a branch worker.
func workerLabels() []string { return []string{"provider_namespace", "provider", "branch"} }

// refusalReasons are every reason an object is refused for
// (placement_refusals_total{reason}), in the API's words: the planner and
// the branch worker report the same words (the tests pin them).
var refusalReasons = []string{
	v1alpha3.ReasonEncryptionRequired,
	v1alpha3.ReasonMarshalFailed,
	v1alpha3.ReasonEncryptionFailed,
	v1alpha3.ReasonIncompleteIdentity,
	v1alpha3.ReasonInvalidDocument,
	v1alpha3.ReasonNotEncrypted,
	v1alpha3.ReasonSensitiveShared,
	v1alpha3.ReasonPlaintextBesideEncrypted,
	v1alpha3.ReasonAuxiliaryPath,
	v1alpha3.ReasonInvalidPlacement,
}

// watchEventTypes are the values of watch_events_total{type}.
var watchEventTypes = []apiwatch.EventType{apiwatch.Added, apiwatch.Modified, apiwatch.Deleted, apiwatch.Bookmark, apiwatch.Error}

// forwardKinds are the values of target_events_total{kind}.
var forwardKinds = []string{"upsert", "delete"}

// New builds the families, with a zero series for every refusal reason.
func New() *Metrics {
	m := newFamilies()
	for _, reason := range refusalReasons {
		m.refusals.WithLabelValues(reason)
	}
	return m
}

func newFamilies() *Metrics {
	return &Metrics{
		commits: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "commits_total",
			Help: "Commits that reached the remote, by author kind (committer, user, serviceaccount, unresolved)."},
			append(workerLabels(), "author_kind")),
		objectsWritten: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "objects_written_total",
			Help: "Objects created, updated or deleted in Git by commits that reached the remote."}, workerLabels()),
		queueDepth: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Name: "branch_worker_queue_depth",
			Help: "Events waiting for a branch worker's loop."}, workerLabels()),
		sweepDeletes: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "resync_sweep_deletes_total",
			Help: "Files deleted by a replay's mark-and-sweep: objects deleted while no watch ran."}, workerLabels()),
		conflicts: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "commit_conflicts_total",
			Help: "Commits replayed because the branch moved under them."}, workerLabels()),
		outcomeWaits: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "outcome_stream_waits_total",
			Help: "Outcomes a branch worker waited to send because the engine's outcome stream was full (none is dropped)."}, workerLabels()),
		commitDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "commit_duration_seconds",
			Help: "Time the forge took to make one commit.", Buckets: prometheus.ExponentialBuckets(0.01, 2, 12)}, workerLabels()),
		eventToCommit: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "event_to_commit_seconds",
			Help:    "Time from a watch event's arrival to the commit carrying it reaching the remote.",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 12)}, workerLabels()),
		requestsPerCommit: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "forge_requests_per_commit",
			Help:    "HTTP requests an API forge made for one commit (fetches after a conflict included).",
			Buckets: []float64{1, 2, 3, 4, 5, 6, 8, 10, 15, 20}}, workerLabels()),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "placement_refusals_total",
			Help: "Objects not written because they could not be written safely, by reason."}, []string{"reason"}),
		placements: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "placements_total",
			Help: "New objects written, by the placement step that chose their path (declared: spec.placement; " +
				"kustomization: beside the folder's one kustomize root; canonical: the built-in layout, a type that may need a spec.placement line)."},
			[]string{"gittarget_namespace", "gittarget", "source"}),
		forwarded: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "target_events_total",
			Help: "Object events a GitTarget handed to its branch worker, by kind (upsert, delete); a suspended GitTarget's are counted, then dropped."},
			[]string{"gittarget_namespace", "gittarget", "kind"}),
		watchEvents: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "watch_events_total",
			Help: "Watch events received, by type (ADDED, MODIFIED, DELETED, BOOKMARK, ERROR)."}, []string{"group", "resource", "type"}),
		watchReplays: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "watch_replays_total",
			Help: "Replays (sendInitialEvents or LIST) started."}, []string{"group", "resource"}),
		watchReconnects: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "watch_reconnects_total",
			Help: "Closed watches resumed from their last resourceVersion."}, []string{"group", "resource"}),
		watchGone: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "watch_gone_total",
			Help: "410 Gone answers that forced a fresh replay."}, []string{"group", "resource"}),
		watchResumes: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "watch_resumes_total",
			Help: "Streams started from their stored resume cursor (Redis), without a replay."}, []string{"group", "resource"}),
		watchColdReplays: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "watch_cold_replays_total",
			Help: "Streams with a cursor store that replayed instead of resuming, by reason (no_cursor, unavailable, expired, gone, branch_rewritten, resync_requested)."},
			[]string{"group", "resource", "reason"}),
	}
}

// Register adds every family to reg.
func (m *Metrics) Register(reg prometheus.Registerer) error {
	for _, c := range m.families() {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

func (m *Metrics) families() []prometheus.Collector {
	return []prometheus.Collector{m.commits, m.objectsWritten, m.queueDepth, m.sweepDeletes, m.conflicts, m.outcomeWaits,
		m.commitDuration, m.eventToCommit, m.requestsPerCommit, m.refusals, m.placements, m.forwarded, m.watchEvents, m.watchReplays, m.watchReconnects, m.watchGone,
		m.watchResumes, m.watchColdReplays}
}

func workerValues(k branch.Key) []string { return []string{k.ProviderNamespace, k.Provider, k.Branch} }

// QueueDepth implements branch.Observer. A worker reports its queue before
// its first message, so this is where its series start at zero.
func (m *Metrics) QueueDepth(k branch.Key, depth int) {
	if _, seen := m.workersSeen.LoadOrStore(k, struct{}{}); !seen {
		m.zeroWorker(k)
	}
	m.queueDepth.WithLabelValues(workerValues(k)...).Set(float64(depth))
}

// zeroWorker creates the series of worker k. Its commits start as the
// committer's, the only author kind written today.
func (m *Metrics) zeroWorker(k branch.Key) {
	w := workerValues(k)
	m.commits.WithLabelValues(append(w, string(branch.AuthorCommitter))...)
	for _, v := range []*prometheus.CounterVec{m.objectsWritten, m.sweepDeletes, m.conflicts, m.outcomeWaits} {
		v.WithLabelValues(w...)
	}
	for _, v := range []*prometheus.HistogramVec{m.commitDuration, m.eventToCommit, m.requestsPerCommit} {
		v.WithLabelValues(w...)
	}
}

// Commit implements engine.OutcomeMetrics: the engine's outcome stream
// tells it.
func (m *Metrics) Commit(k branch.Key, c branch.CommitStats) {
	m.commits.WithLabelValues(append(workerValues(k), string(c.Author))...).Inc()
	m.objectsWritten.WithLabelValues(workerValues(k)...).Add(float64(c.Objects))
	m.sweepDeletes.WithLabelValues(workerValues(k)...).Add(float64(c.SweepDeletes))
	m.commitDuration.WithLabelValues(workerValues(k)...).Observe(c.Took.Seconds())
	if c.Requests > 0 {
		m.requestsPerCommit.WithLabelValues(workerValues(k)...).Observe(float64(c.Requests))
	}
	for _, source := range c.Placements {
		m.placements.WithLabelValues(c.Target.Namespace, c.Target.Name, string(source)).Inc()
	}
}

// EventToCommit implements engine.OutcomeMetrics.
func (m *Metrics) EventToCommit(k branch.Key, latency time.Duration) {
	m.eventToCommit.WithLabelValues(workerValues(k)...).Observe(latency.Seconds())
}

// Conflict implements branch.Observer.
func (m *Metrics) Conflict(k branch.Key) { m.conflicts.WithLabelValues(workerValues(k)...).Inc() }

// OutcomeWait implements branch.Observer.
func (m *Metrics) OutcomeWait(k branch.Key) { m.outcomeWaits.WithLabelValues(workerValues(k)...).Inc() }

// Refused implements engine.OutcomeMetrics.
func (m *Metrics) Refused(_ branch.Key, reason string) { m.refusals.WithLabelValues(reason).Inc() }

// Forwarded implements mirror.Observer; the target's other series were
// made when its replay ended (Replayed), not on every event.
func (m *Metrics) Forwarded(t branch.TargetKey, kind string, _ manifest.ObjectID) {
	m.forwarded.WithLabelValues(t.Namespace, t.Name, kind).Inc()
}

// zeroTarget creates target t's series, so a target that has only
// upserted also shows zero deletes.
func (m *Metrics) zeroTarget(t branch.TargetKey) {
	for _, kind := range forwardKinds {
		m.forwarded.WithLabelValues(t.Namespace, t.Name, kind)
	}
	for _, source := range manifest.PlacementSources() {
		m.placements.WithLabelValues(t.Namespace, t.Name, string(source))
	}
}

// ObjectRefused implements mirror.Observer.
func (m *Metrics) ObjectRefused(_ branch.TargetKey, reason string, _ manifest.ObjectID) {
	m.refusals.WithLabelValues(reason).Inc()
}

// Replayed implements mirror.Observer: a target whose replay found nothing
// still has its series.
func (m *Metrics) Replayed(t branch.TargetKey) { m.zeroTarget(t) }

// ReplayEnded implements mirror.Observer.
func (m *Metrics) ReplayEnded(branch.TargetKey, manifest.SweepScope, []watch.ObjectKey) {}

// StreamForbidden implements mirror.Observer; the GitTarget's status names
// the refused stream.
func (m *Metrics) StreamForbidden(branch.TargetKey, watch.Forbidden) {}

// StreamPhase implements mirror.Observer.
func (m *Metrics) StreamPhase(branch.TargetKey) {}

// StreamObserver implements mirror.Observer.
func (m *Metrics) StreamObserver() watch.Observer { return streamObserver{m} }

type streamObserver struct{ m *Metrics }

func (s streamObserver) Event(scope watch.Scope, typ apiwatch.EventType) {
	s.m.watchEvents.WithLabelValues(scope.GVR.Group, scope.GVR.Resource, string(typ)).Inc()
}

// Replay or Resumed is a stream's first report, so its series start there.
func (s streamObserver) zeroStream(scope watch.Scope) {
	group, resource := scope.GVR.Group, scope.GVR.Resource
	for _, typ := range watchEventTypes {
		s.m.watchEvents.WithLabelValues(group, resource, string(typ))
	}
	for _, v := range []*prometheus.CounterVec{s.m.watchReconnects, s.m.watchGone, s.m.watchReplays, s.m.watchResumes} {
		v.WithLabelValues(group, resource)
	}
	for _, reason := range coldReplayReasons {
		s.m.watchColdReplays.WithLabelValues(group, resource, reason)
	}
}

// coldReplayReasons are the values of watch_cold_replays_total{reason}.
var coldReplayReasons = []string{watch.ColdNoCursor, watch.ColdUnavailable, watch.ColdExpired, watch.ColdGone,
	watch.ColdBranchRewritten, watch.ColdResyncRequested}

func (s streamObserver) Replay(scope watch.Scope) {
	s.zeroStream(scope)
	s.m.watchReplays.WithLabelValues(scope.GVR.Group, scope.GVR.Resource).Inc()
}

func (s streamObserver) Resumed(scope watch.Scope) {
	s.zeroStream(scope)
	s.m.watchResumes.WithLabelValues(scope.GVR.Group, scope.GVR.Resource).Inc()
}

func (s streamObserver) ColdReplay(scope watch.Scope, reason string) {
	s.m.watchColdReplays.WithLabelValues(scope.GVR.Group, scope.GVR.Resource, reason).Inc()
}

func (s streamObserver) Reconnect(scope watch.Scope) {
	s.m.watchReconnects.WithLabelValues(scope.GVR.Group, scope.GVR.Resource).Inc()
}

func (s streamObserver) Gone(scope watch.Scope) {
	s.m.watchGone.WithLabelValues(scope.GVR.Group, scope.GVR.Resource).Inc()
}
