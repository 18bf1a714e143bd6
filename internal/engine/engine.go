// Package engine holds the operator's running state — source contexts,
// branch workers and target mirrors — behind a small API the reconcilers
// call. It is a controller-runtime Runnable that needs leader election, so
// exactly one replica does object-state work.
package engine

import (
	"context"
	"errors"
	"sync"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/configbutler/gitops-reverser/internal/branch"
	"github.com/configbutler/gitops-reverser/internal/discovery"
	"github.com/configbutler/gitops-reverser/internal/facts"
	"github.com/configbutler/gitops-reverser/internal/mirror"
	"github.com/configbutler/gitops-reverser/internal/rules"
)

// ErrNotStarted is returned until the engine runs (the replica is not the
// leader yet), and for a new worker once it is stopping; reconcilers
// requeue.
var ErrNotStarted = errors.New("the mirroring engine is not running on this replica yet")

// Options configure an Engine.
type Options struct {
	// LocalConfig is the operator's own cluster, the source of a
	// ClusterProvider without a kubeConfig.
	LocalConfig *rest.Config
	Policy      discovery.Policy
	// BufferMax closes a commit window once it holds this many bytes.
	BufferMax int
	Log       logr.Logger
	Metrics   Metrics
	// Attribution, when set, names the authors of live changes; nil is
	// configured-author mode.
	Attribution *Attribution
	// Cursors, when set, keeps the watch streams' resume cursors (Redis);
	// nil makes every start a replay.
	Cursors mirror.CursorStore
	// CursorObserver counts cursor writes and store errors.
	CursorObserver mirror.CursorObserver
	// Builders build what a worker commits with (PrepareWorker).
	Builders Builders
	// Journal, when set with Ownership, keeps every branch's accepted
	// writes in Redis for the next owner (branch.Config.Journal), sealed
	// with JournalSealer and fenced by the Ownership's token.
	Journal         branch.Journal
	JournalSealer   branch.JournalSealer
	JournalObserver branch.JournalObserver
	// Ownership, when set, is which branches this replica runs (several
	// replicas); nil runs every branch, on the elected replica.
	Ownership Ownership
	// ClaimsChanged, when set, is called after a target is applied or
	// removed: LocalClaims may have changed (the admission observer's
	// registration follows them). It must not block.
	ClaimsChanged func()
}

// Attribution is the resolver a target's streams ask for the author of a
// live change, and how they make sure the facts of their types are
// followed.
type Attribution struct {
	Resolver mirror.Resolver
	Follow   func(facts.StreamKey)
}

// forSource is the attribution of a target reading src; nil when off.
func (a *Attribution) forSource(src *Source) *mirror.Attribution {
	if a == nil {
		return nil
	}
	return &mirror.Attribution{Route: src.AuditRoute, Resolver: a.Resolver, Follow: a.Follow}
}

// Metrics is what the engine reports to: the workers' loops (Observer),
// the outcome stream's fan-out (OutcomeMetrics) and the mirrors.
type Metrics interface {
	branch.Observer
	OutcomeMetrics
	mirror.Observer
}

// Engine is the running state shared by the reconcilers.
type Engine struct {
	opts Options
	// outcomes is the one stream every worker's outcomes leave on
	// (outcomes.go); its fan-out feeds changed, answered, the waiters and
	// metrics.
	outcomes chan branch.Outcome
	// changed carries GitTargets whose runtime state changed (a commit, a
	// refusal, a failure, a stream's phase), so their status is refreshed
	// promptly.
	changed *coalescer[branch.TargetKey]
	// answered carries CommitRequests whose worker answered.
	answered *coalescer[types.NamespacedName]
	// workerRuns counts the workers' running loops: the stream closes
	// only once none is left to send on it.
	workerRuns sync.WaitGroup

	mu      sync.Mutex
	ctx     context.Context
	started chan struct{}
	// stopping: Start's context ended; no worker starts any more.
	stopping bool
	sources  map[string]*Source
	workers  map[branch.Key]*workerEntry
	targets  map[branch.TargetKey]*targetEntry
	// branchOf is the branch of every GitTarget noted, owned here or not
	// (ownership.go); releasing are the branches being handed over.
	branchOf  map[branch.TargetKey]branch.Key
	releasing map[branch.Key]bool
	// elsewhere are the claims of the GitTargets on this cluster that
	// other replicas run (NoteClaims), for LocalClaims.
	elsewhere map[branch.TargetKey][]rules.Claim
	// handover serialises a release with the applies under way (read
	// locked for each ApplyTarget), so no apply that saw the branch owned
	// starts it again after its release.
	handover sync.RWMutex
}

// New builds an engine; add it to the manager with mgr.Add.
func New(opts Options) *Engine {
	return &Engine{
		opts:      opts,
		outcomes:  make(chan branch.Outcome, outcomeStreamSize),
		changed:   newCoalescer(targetObject),
		answered:  newCoalescer(requestObject),
		started:   make(chan struct{}),
		sources:   map[string]*Source{},
		workers:   map[branch.Key]*workerEntry{},
		targets:   map[branch.TargetKey]*targetEntry{},
		branchOf:  map[branch.TargetKey]branch.Key{},
		releasing: map[branch.Key]bool{},
		elsewhere: map[branch.TargetKey][]rules.Claim{},
	}
}

// Changed is the channel reconcilers watch (source.Channel) for GitTargets
// whose status should be refreshed.
func (e *Engine) Changed() <-chan event.GenericEvent { return e.changed.out }

// NeedLeaderElection: object-state work runs on the elected replica only,
// unless the replicas share it by branch (Options.Ownership): then every
// replica runs the branches it owns.
func (e *Engine) NeedLeaderElection() bool { return e.opts.Ownership == nil }

// Start runs until ctx ends, then stops every stream and lets every worker
// commit what it holds; the outcomes of that last try are delivered too
// (a Flush or a CommitRequest waiting is answered) before it returns.
func (e *Engine) Start(ctx context.Context) error {
	e.mu.Lock()
	e.ctx = ctx
	close(e.started)
	e.mu.Unlock()
	go e.changed.run(ctx)
	go e.answered.run(ctx)
	fanned := make(chan struct{})
	go e.runOutcomes(fanned)
	<-ctx.Done()
	e.stopAll()
	e.workerRuns.Wait()
	close(e.outcomes)
	<-fanned
	return nil
}

// RetryWhenStarted asks for target t to be reconciled as soon as the
// engine starts: a reconcile that found it not started (it came first in
// the manager's start, or this replica just became the leader) then does
// not wait for its requeue. Before the start it only queues (merging with
// any queued for t); once started it is an ordinary status refresh.
func (e *Engine) RetryWhenStarted(t branch.TargetKey) { e.notify(t) }

func (e *Engine) running() (context.Context, error) {
	select {
	case <-e.started:
		return e.ctx, nil
	default:
		return nil, ErrNotStarted
	}
}

func (e *Engine) stopAll() {
	e.mu.Lock()
	e.stopping = true
	targets := e.targets
	workers := e.workers
	e.targets = map[branch.TargetKey]*targetEntry{}
	e.workers = map[branch.Key]*workerEntry{}
	e.mu.Unlock()
	for _, t := range targets {
		t.mirror.Stop()
	}
	for _, w := range workers {
		w.stop()
	}
}

// notify queues a status refresh for a target without ever blocking a
// worker; one already queued for it absorbs this one.
func (e *Engine) notify(t branch.TargetKey) { e.changed.notify(t) }
