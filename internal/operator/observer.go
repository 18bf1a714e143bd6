package operator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	kdiscovery "k8s.io/client-go/discovery"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/admission/observer"
	"github.com/configbutler/gitops-reverser/internal/discovery"
	"github.com/configbutler/gitops-reverser/internal/metrics"
	"github.com/configbutler/gitops-reverser/internal/rules"
)

// ObserverOptions configure the admission observer: its webhook, served by
// the /validate-operator-types server with its certificate, and the
// ValidatingWebhookConfiguration the operator keeps for it.
type ObserverOptions struct {
	// WebhookConfiguration is the name of the configuration the operator
	// owns: it writes its webhooks (created when absent).
	WebhookConfiguration string
	// ServiceNamespace, ServiceName and ServicePort reach the webhook in
	// cluster (port 443 when zero). The API server connects to the Pod's
	// target port behind the Service, which on a GKE private cluster must be
	// one its firewall lets the control plane reach (the chart's
	// admission.port; see docs/attribution-admission.md).
	ServiceNamespace, ServiceName string
	ServicePort                   int32
	// URL reaches the webhook instead of a Service (an API server outside
	// the cluster, tests): https://host:port, the path is added.
	URL string
	// TimeoutSeconds of a review (at most 2; 2 when zero).
	TimeoutSeconds int32
	// Resync is how often the registration is written again (a minute when
	// zero): it copies the caBundle of the operator's webhook configuration.
	Resync time.Duration
}

func (o *ObserverOptions) check() error {
	switch {
	case o.WebhookConfiguration == "":
		return errors.New("the admission observer needs the name of its webhook configuration (--admission-observer-configuration)")
	case (o.URL == "") == (o.ServiceName == ""):
		return errors.New("the admission observer needs exactly one of a Service (--admission-observer-service) or a URL (--admission-observer-url)")
	case o.ServiceName != "" && o.ServiceNamespace == "":
		return errors.New("the admission observer's Service needs its namespace (--admission-observer-service-namespace)")
	case o.TimeoutSeconds < 0 || o.TimeoutSeconds > observer.DefaultTimeoutSeconds:
		return fmt.Errorf("--admission-observer-timeout-seconds %d: want 1 to %d, a review adds at most that to a write", o.TimeoutSeconds, observer.DefaultTimeoutSeconds)
	}
	return nil
}

// clientConfig is how the API server reaches the observer.
func (o *ObserverOptions) clientConfig() admissionregistrationv1.WebhookClientConfig {
	if o.URL != "" {
		url := o.URL + observer.Path
		return admissionregistrationv1.WebhookClientConfig{URL: &url}
	}
	port := o.ServicePort
	if port == 0 {
		port = 443
	}
	return admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
		Namespace: o.ServiceNamespace, Name: o.ServiceName, Port: &port}}
}

// observerSetup is the admission observer of a running operator: the
// registrar the engine tells about claim changes.
type observerSetup struct {
	registrar *observer.Registrar
}

// changed is the engine's ClaimsChanged; nil when the observer is off.
func (s *observerSetup) changed() func() {
	if s == nil {
		return nil
	}
	return s.registrar.Changed
}

// setupObserver serves the observer on the operator's webhook server and
// adds its registrar; nil when attribution does not use admission (checkOptions
// made sure the webhook server exists when it does). claims is read once
// the engine runs.
func setupObserver(mgr ctrl.Manager, o Options, pipeline *attributionPipeline, reg prometheus.Registerer,
	claims func() []rules.Claim) (*observerSetup, error) {
	a := o.Attribution
	if a == nil || !a.admission() {
		return nil, nil
	}
	om := metrics.NewObserverMetrics()
	if err := om.Register(reg); err != nil {
		return nil, fmt.Errorf("registering admission observer metrics: %w", err)
	}
	handler, err := observer.NewHandler(observer.HandlerOptions{Transport: pipeline.factTransport(), Local: pipeline.index.Apply,
		Routes: localRoutes(mgr.GetClient()), Observer: om, Sensitive: discovery.Policy{AdditionalSensitive: o.AdditionalSensitive}.IsSensitive})
	if err != nil {
		return nil, fmt.Errorf("building the admission observer: %w", err)
	}
	mgr.GetWebhookServer().Register(observer.Path, guardPanics("admission-observer", handler, o.RecoverPanic))
	// Uncached: the registrar reads two configurations, it does not watch
	// them all.
	c, err := client.New(o.Config, client.Options{Scheme: mgr.GetScheme()})
	if err != nil {
		return nil, fmt.Errorf("building the admission observer's client: %w", err)
	}
	disco, err := kdiscovery.NewDiscoveryClientForConfig(o.Config)
	if err != nil {
		return nil, fmt.Errorf("building the admission observer's discovery client: %w", err)
	}
	registrar := observer.NewRegistrar(observer.Registrar{
		Client: c, Name: a.Observer.WebhookConfiguration, CABundleFrom: o.Admission.WebhookConfiguration,
		Spec:   observer.WebhookSpec{ClientConfig: a.Observer.clientConfig(), TimeoutSeconds: a.Observer.TimeoutSeconds},
		Claims: claims, Discovery: disco, Resync: a.Observer.Resync, Log: ctrl.Log.WithName("admission-observer"),
	})
	if err := mgr.Add(registrar); err != nil {
		return nil, fmt.Errorf("adding the admission observer's registrar: %w", err)
	}
	return &observerSetup{registrar: registrar}, nil
}

// localRoutes are the audit routes of the ClusterProviders that read the
// operator's own cluster (no kubeConfig), from the manager's cache: the
// streams a review of that cluster's API server belongs to.
func localRoutes(c client.Reader) func(context.Context) ([]string, error) {
	return func(ctx context.Context) ([]string, error) {
		var providers v1alpha3.ClusterProviderList
		if err := c.List(ctx, &providers); err != nil {
			return nil, fmt.Errorf("listing ClusterProviders: %w", err)
		}
		var routes []string
		for i := range providers.Items {
			if providers.Items[i].Spec.KubeConfig == nil {
				routes = append(routes, providers.Items[i].AuditRoute())
			}
		}
		slices.Sort(routes)
		return slices.Compact(routes), nil
	}
}
