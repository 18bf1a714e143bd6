package operator

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/configbutler/gitops-reverser/internal/branch"
	"github.com/configbutler/gitops-reverser/internal/engine"
	"github.com/configbutler/gitops-reverser/internal/ha"
	"github.com/configbutler/gitops-reverser/internal/metrics"
	"github.com/configbutler/gitops-reverser/internal/redisstore"
)

// checkHA refuses several replicas without what they share: Redis (the
// branch claims, the journal, the facts) and a name for each replica.
func checkHA(o *Options) error {
	if o.Replicas <= 1 {
		return nil
	}
	if o.Redis == nil {
		return fmt.Errorf("--replica-count=%d: replicas share the work through Redis (branch claims, the write journal, "+
			"attribution facts); set --redis-addr", o.Replicas)
	}
	if o.ReplicaIdentity == "" {
		return fmt.Errorf("--replica-count=%d: each replica needs its own name (--replica-identity, $POD_NAME in the chart)", o.Replicas)
	}
	return nil
}

// haSetup is the membership and branch assignment of several replicas;
// nil with one.
type haSetup struct {
	assigner *ha.Assigner
	host     *engineHost
	// journal keeps every branch's accepted writes for the next owner,
	// sealed with the key every replica shares.
	journal  *redisstore.Journal
	sealer   branch.JournalSealer
	journals *metrics.JournalMetrics
}

// engineHost is the engine as the assigner's Host, bound once the engine
// is built (the engine is built with the assigner as its Ownership).
type engineHost struct{ engine *engine.Engine }

func (h *engineHost) Branches() []branch.Key { return h.engine.Branches() }
func (h *engineHost) Take(k branch.Key)      { h.engine.Take(k) }
func (h *engineHost) Release(ctx context.Context, k branch.Key, graceful bool) {
	h.engine.Release(ctx, k, graceful)
}

// setupHA builds the membership (one Lease per replica in the operator
// namespace) and the assigner, and adds both to the manager on every
// replica; nil with one replica.
func setupHA(ctx context.Context, mgr ctrl.Manager, o Options, redis *redisSetup, reg prometheus.Registerer) (*haSetup, error) {
	if o.Replicas <= 1 {
		return nil, nil
	}
	hm, jm := metrics.NewHAMetrics(), metrics.NewJournalMetrics()
	if err := hm.Register(reg); err != nil {
		return nil, fmt.Errorf("registering HA metrics: %w", err)
	}
	if err := jm.Register(reg); err != nil {
		return nil, fmt.Errorf("registering journal metrics: %w", err)
	}
	sealer, err := journalSealer(ctx, mgr, o.OperatorNamespace, o.apiServerBackoff())
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(o.Config)
	if err != nil {
		return nil, fmt.Errorf("HA membership client: %w", err)
	}
	log := ctrl.Log.WithName("ha")
	// The Lease publishes when the assigner last reached Redis; the
	// assigner is built just below, before either runs.
	var assigner *ha.Assigner
	members, err := ha.New(ha.Config{Client: client, Namespace: o.OperatorNamespace, Identity: o.ReplicaIdentity,
		StoreContact: func() time.Time { return assigner.StoreContact() }, Observer: hm, Log: log})
	if err != nil {
		return nil, fmt.Errorf("HA membership: %w", err)
	}
	token, err := claimToken(o.ReplicaIdentity)
	if err != nil {
		return nil, err
	}
	host := &engineHost{}
	journal := &redisstore.Journal{Client: redis.client, Prefix: o.Redis.Prefix()}
	assigner, err = ha.NewAssigner(ha.AssignerConfig{Members: members, Host: host, Token: token,
		Claims:   &redisstore.Claims{Client: redis.client, Prefix: o.Redis.Prefix()},
		Ping:     func(ctx context.Context) error { return redis.client.Ping(ctx).Err() },
		Drop:     journal.DropSettled,
		Observer: hm, Log: log})
	if err != nil {
		return nil, fmt.Errorf("HA assignment: %w", err)
	}
	for _, r := range []manager.Runnable{everyReplica(members.Run), everyReplica(assigner.Run)} {
		if err := mgr.Add(r); err != nil {
			return nil, fmt.Errorf("adding HA membership: %w", err)
		}
	}
	return &haSetup{assigner: assigner, host: host, sealer: sealer, journals: jm, journal: journal}, nil
}

// journalSealer seals with the key every replica shares (journalKey).
func journalSealer(ctx context.Context, mgr ctrl.Manager, namespace string, backoff wait.Backoff) (branch.JournalSealer, error) {
	// The manager's client reads through a cache that is not started yet.
	c, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme()})
	if err != nil {
		return nil, fmt.Errorf("HA journal key client: %w", err)
	}
	key, err := journalKey(ctx, c, namespace, backoff, ctrl.Log.WithName("startup"))
	if err != nil {
		return nil, err
	}
	return branch.NewAEADSealer(key)
}

// configure gives the engine its Ownership and the journal; with one
// replica it leaves both unset.
func (h *haSetup) configure(opts *engine.Options) {
	if h == nil {
		return
	}
	opts.Ownership = h.assigner
	opts.Journal, opts.JournalSealer, opts.JournalObserver = h.journal, h.sealer, h.journals
}

// claimToken is the replica's name and a value new for this process: a
// pod restarted under the same name holds none of its predecessor's
// claims.
func claimToken(identity string) (string, error) {
	nonce := make([]byte, 8)
	if _, err := rand.Read(nonce); err != nil {
		return "", errors.New("HA: no randomness for the claim token")
	}
	return identity + "-" + hex.EncodeToString(nonce), nil
}

// bind hands the built engine to the assigner.
func (h *haSetup) bind(e *engine.Engine) {
	if h != nil {
		h.host.engine = e
	}
}

// everyReplica is a Runnable that runs on every replica, leader or not.
type everyReplica func(ctx context.Context) error

func (r everyReplica) Start(ctx context.Context) error { return r(ctx) }
func (everyReplica) NeedLeaderElection() bool          { return false }
