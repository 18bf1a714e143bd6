package observer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/configbutler/gitops-reverser/internal/rules"
)

// DefaultResync is how often the registration is written again whatever
// changed: the caBundle it copies is renewed, a helm upgrade or a hand
// edit may have changed the configuration, a CRD may have gained /scale.
const DefaultResync = time.Minute

// ManagedByLabel marks the configuration as the operator's.
const ManagedByLabel = "app.kubernetes.io/managed-by"

// Registrar keeps the observer's ValidatingWebhookConfiguration: webhooks
// for the types the operator mirrors from its own cluster (Claims), with
// the caBundle of the operator's own webhook configuration, whose
// certificate machinery (self-issued, or cert-manager's injector) serves
// both webhooks. It runs on the leader, where the claims are known.
type Registrar struct {
	// Client reads and writes ValidatingWebhookConfigurations.
	Client client.Client
	// Name of the configuration the registrar owns; created when absent.
	Name string
	// CABundleFrom is the operator's ValidatingWebhookConfiguration
	// (/validate-operator-types): its caBundle is copied. Empty when Spec's
	// ClientConfig carries a caBundle of its own.
	CABundleFrom string
	// Spec is what the webhooks are built from; Spec.Scalable is filled in
	// from Discovery when nil.
	Spec WebhookSpec
	// Claims are the types mirrored from the operator's own cluster.
	Claims func() []rules.Claim
	// Discovery answers which resources serve /scale; nil registers none.
	Discovery interface {
		ServerResourcesForGroupVersion(groupVersion string) (*metav1.APIResourceList, error)
	}
	Resync time.Duration
	Clock  clock.WithTicker
	Log    logr.Logger

	changed chan struct{}
	last    []admissionregistrationv1.ValidatingWebhook
	// subresources are discovery's answers per group/version, asked again
	// on every forced (periodic) sync: claims change on every reconcile.
	subresources map[schema.GroupVersion]map[string]bool
}

// NewRegistrar is r, ready for Changed and Start.
func NewRegistrar(r Registrar) *Registrar {
	r.changed = make(chan struct{}, 1)
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.Resync <= 0 {
		r.Resync = DefaultResync
	}
	return &r
}

// Changed tells the registrar the claims may have changed; it never
// blocks (engine.Options.ClaimsChanged).
func (r *Registrar) Changed() {
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// NeedLeaderElection: one writer, the replica whose engine knows the
// claims.
func (r *Registrar) NeedLeaderElection() bool { return true }

// Start writes the registration when the claims change, and again every
// Resync, until ctx ends. It waits for the first change before writing: a
// new leader's engine has applied no target yet, and writing its empty
// claims would unregister every type until it has.
func (r *Registrar) Start(ctx context.Context) error {
	ticker := r.Clock.NewTicker(r.Resync)
	defer ticker.Stop()
	for {
		force := false
		select {
		case <-ctx.Done():
			return nil
		case <-r.changed:
		case <-ticker.C():
			force = true
		}
		if err := r.Sync(ctx, force); err != nil && ctx.Err() == nil {
			r.Log.Error(err, "registering the admission observer")
		}
	}
}

// Sync writes the configuration when its webhooks differ from the last
// written, or always with force.
func (r *Registrar) Sync(ctx context.Context, force bool) error {
	bundle, err := r.caBundle(ctx)
	if err != nil {
		return err
	}
	spec := r.Spec
	spec.ClientConfig = *spec.ClientConfig.DeepCopy()
	if bundle != nil {
		spec.ClientConfig.CABundle = bundle
	}
	if spec.Scalable == nil {
		if force {
			r.subresources = nil
		}
		spec.Scalable = r.scalable()
	}
	desired := Webhooks(r.Claims(), spec)
	if !force && r.last != nil && apiequality.Semantic.DeepEqual(desired, r.last) {
		return nil
	}
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error { return r.write(ctx, desired) }); err != nil {
		return err
	}
	if r.last == nil || !apiequality.Semantic.DeepEqual(desired, r.last) {
		r.Log.Info("registered the admission observer", "webhookConfiguration", r.Name, "webhooks", len(desired))
	}
	r.last = desired
	return nil
}

func (r *Registrar) write(ctx context.Context, webhooks []admissionregistrationv1.ValidatingWebhook) error {
	var cfg admissionregistrationv1.ValidatingWebhookConfiguration
	err := r.Client.Get(ctx, types.NamespacedName{Name: r.Name}, &cfg)
	if apierrors.IsNotFound(err) {
		cfg = admissionregistrationv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: r.Name, Labels: map[string]string{ManagedByLabel: "gitops-reverser"}},
			Webhooks:   webhooks,
		}
		if err := r.Client.Create(ctx, &cfg); err != nil {
			return fmt.Errorf("creating ValidatingWebhookConfiguration %s: %w", r.Name, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading ValidatingWebhookConfiguration %s: %w", r.Name, err)
	}
	cfg.Webhooks = keepInjectedBundles(webhooks, cfg.Webhooks)
	// An update that changes nothing the API server stores is not a write:
	// the periodic resync costs no new version.
	if err := r.Client.Update(ctx, &cfg); err != nil {
		return fmt.Errorf("writing ValidatingWebhookConfiguration %s: %w", r.Name, err)
	}
	return nil
}

// keepInjectedBundles gives each webhook without a caBundle the one the
// live configuration holds (its namesake's, else any): with CABundleFrom
// empty something else injects it (cert-manager's cainjector), and a
// write must not take it away.
func keepInjectedBundles(desired, live []admissionregistrationv1.ValidatingWebhook) []admissionregistrationv1.ValidatingWebhook {
	var anyBundle []byte
	byName := map[string][]byte{}
	for _, w := range live {
		if len(w.ClientConfig.CABundle) > 0 {
			byName[w.Name] = w.ClientConfig.CABundle
			anyBundle = w.ClientConfig.CABundle
		}
	}
	out := make([]admissionregistrationv1.ValidatingWebhook, len(desired))
	for i, w := range desired {
		out[i] = *w.DeepCopy()
		if len(w.ClientConfig.CABundle) > 0 {
			continue
		}
		if bundle, ok := byName[w.Name]; ok {
			out[i].ClientConfig.CABundle = bundle
		} else {
			out[i].ClientConfig.CABundle = anyBundle
		}
	}
	return out
}

// caBundle is the first caBundle of the operator's own configuration;
// nil when none is set to copy it from.
func (r *Registrar) caBundle(ctx context.Context) ([]byte, error) {
	if r.CABundleFrom == "" {
		return nil, nil
	}
	var cfg admissionregistrationv1.ValidatingWebhookConfiguration
	if err := r.Client.Get(ctx, types.NamespacedName{Name: r.CABundleFrom}, &cfg); err != nil {
		return nil, fmt.Errorf("reading the caBundle of ValidatingWebhookConfiguration %s: %w", r.CABundleFrom, err)
	}
	for _, w := range cfg.Webhooks {
		if len(w.ClientConfig.CABundle) > 0 {
			return w.ClientConfig.CABundle, nil
		}
	}
	return nil, errors.New("ValidatingWebhookConfiguration " + r.CABundleFrom + " has no caBundle yet")
}

// scalable asks discovery, once per group/version until the next forced
// sync, which resources serve /scale; a group/version discovery cannot
// answer has none until then.
func (r *Registrar) scalable() func(schema.GroupVersionResource) bool {
	if r.Discovery == nil {
		return nil
	}
	if r.subresources == nil {
		r.subresources = map[schema.GroupVersion]map[string]bool{}
	}
	return func(gvr schema.GroupVersionResource) bool {
		gv := gvr.GroupVersion()
		subs, ok := r.subresources[gv]
		if !ok {
			subs = map[string]bool{}
			if list, err := r.Discovery.ServerResourcesForGroupVersion(gv.String()); err == nil {
				for _, res := range list.APIResources {
					subs[res.Name] = true
				}
			}
			r.subresources[gv] = subs
		}
		return subs[gvr.Resource+"/scale"]
	}
}
