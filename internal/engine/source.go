package engine

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sdiscovery "k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/configbutler/gitops-reverser/internal/branch"
	"github.com/configbutler/gitops-reverser/internal/discovery"
	"github.com/configbutler/gitops-reverser/internal/rules"
	"github.com/configbutler/gitops-reverser/internal/watch"
)

// catalogRefresh is how often a source's API surface is scanned again.
const catalogRefresh = 30 * time.Second

// Source is one source cluster's context: its clients and its discovery
// catalog. Sources are keyed by ClusterProvider name, so two providers for
// the same server stay separate.
type Source struct {
	Name string
	// AuditRoute is where the source's audit events arrive
	// (/audit-webhook/<route>): the scope of its attribution facts.
	AuditRoute string
	// Local is the operator's own cluster, where CRD changes are watched.
	Local       bool
	Dynamic     dynamic.Interface
	Metadata    metadata.Interface
	Kube        kubernetes.Interface
	Catalog     *discovery.Catalog
	fingerprint string
	cancel      context.CancelFunc
}

// SourceConfig is how to reach a source cluster.
type SourceConfig struct {
	Config *rest.Config
	// Local is the operator's own cluster.
	Local bool
	// AuditRoute is the ClusterProvider's audit route.
	AuditRoute string
	// Fingerprint changes when the configuration does; a new one rebuilds the
	// source.
	Fingerprint string
}

// EnsureSource returns the source for a ClusterProvider, building it (and
// refreshing its catalog once) when it is new or its configuration changed.
func (e *Engine) EnsureSource(ctx context.Context, name string, sc SourceConfig) (*Source, error) {
	runCtx, err := e.running()
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	existing := e.sources[name]
	e.mu.Unlock()
	if existing != nil && existing.fingerprint == sc.Fingerprint {
		return existing, nil
	}
	src, err := newSource(name, sc, e.opts.Policy)
	if err != nil {
		return nil, err
	}
	if err := src.Catalog.Refresh(ctx); err != nil {
		// One group failing (an aggregated API down) leaves the rest of the
		// surface usable; the catalog keeps what it could read.
		if _, partial := k8sdiscovery.GroupDiscoveryFailedErrorGroups(err); !partial {
			return nil, fmt.Errorf("reading the API surface of source %s: %w", name, err)
		}
		e.opts.Log.Info("part of the source's API surface is unavailable", "source", name, "error", err.Error())
	}
	srcCtx, cancel := context.WithCancel(runCtx)
	src.cancel = cancel
	go src.refreshLoop(srcCtx, e)
	e.mu.Lock()
	if old := e.sources[name]; old != nil {
		old.cancel()
	}
	e.sources[name] = src
	e.mu.Unlock()
	return src, nil
}

// SourceFor returns a running source, or nil.
func (e *Engine) SourceFor(name string) *Source {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.sources[name]
}

// releaseSource stops a source that no GitTarget uses any more.
func (e *Engine) releaseSource(name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, t := range e.targets {
		if t.spec.Source == name {
			return
		}
	}
	if src := e.sources[name]; src != nil {
		src.cancel()
		delete(e.sources, name)
	}
}

func newSource(name string, sc SourceConfig, policy discovery.Policy) (*Source, error) {
	cfg := sc.Config
	// The streams' client: a replay's watch events parsed once each.
	dyn, err := watch.NewDynamicClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the dynamic client of source %s: %w", name, err)
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the metadata client of source %s: %w", name, err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the client of source %s: %w", name, err)
	}
	return &Source{
		Name: name, AuditRoute: sc.AuditRoute, Local: sc.Local, Dynamic: dyn, Metadata: meta, Kube: kube,
		fingerprint: sc.Fingerprint,
		Catalog:     &discovery.Catalog{Discovery: kube.Discovery(), Policy: policy},
	}, nil
}

// refreshLoop rescans discovery on a cadence; a changed surface asks every
// GitTarget on this source to resolve its rules again.
func (s *Source) refreshLoop(ctx context.Context, e *Engine) {
	ticker := time.NewTicker(catalogRefresh)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			before := s.Catalog.Generation()
			if err := s.Catalog.Refresh(ctx); err != nil {
				e.opts.Log.Info("discovery refresh failed; keeping the last known API surface", "source", s.Name, "error", err.Error())
				continue
			}
			if s.Catalog.Generation() != before {
				e.notifySource(s.Name)
			}
		}
	}
}

// Refresh rescans the source's API surface now (a CRD changed).
func (s *Source) Refresh(ctx context.Context) error { return s.Catalog.Refresh(ctx) }

// Namespaces lists the source's namespaces with their labels, for
// selector and "*" source-namespace policies.
func (s *Source) Namespaces(ctx context.Context) ([]rules.NamespaceInfo, error) {
	list, err := s.Kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing namespaces of source %s: %w", s.Name, err)
	}
	return NamespaceInfos(list.Items), nil
}

// NamespaceInfos is what rules need of namespaces: the names and labels of
// those not terminating.
func NamespaceInfos(namespaces []corev1.Namespace) []rules.NamespaceInfo {
	out := make([]rules.NamespaceInfo, 0, len(namespaces))
	for _, ns := range namespaces {
		if ns.Status.Phase == corev1.NamespaceTerminating {
			continue
		}
		out = append(out, rules.NamespaceInfo{Name: ns.Name, Labels: ns.Labels})
	}
	return out
}

func (e *Engine) notifySource(name string) {
	e.mu.Lock()
	var keys []branch.TargetKey
	for key, t := range e.targets {
		if t.spec.Source == name {
			keys = append(keys, key)
		}
	}
	e.mu.Unlock()
	for _, k := range keys {
		e.notify(k)
	}
}

// RefreshLocalSources rescans every source that is the operator's own
// cluster (a control-plane CRD changed).
func (e *Engine) RefreshLocalSources(ctx context.Context) {
	e.mu.Lock()
	var local []*Source
	for _, s := range e.sources {
		if s.Local {
			local = append(local, s)
		}
	}
	e.mu.Unlock()
	for _, s := range local {
		if err := s.Refresh(ctx); err != nil {
			e.opts.Log.Info("discovery refresh after a CRD change failed", "source", s.Name, "error", err.Error())
		}
	}
}
