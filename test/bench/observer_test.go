package bench

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/admission"
	"github.com/configbutler/gitops-reverser/internal/admission/observer"
	"github.com/configbutler/gitops-reverser/test/harness"
)

// benchObserver is the admission observer of one operator run on the
// shared API server, whose audit policy covers none of the types the
// observer reviews: attribution from admission alone. Both of the
// operator's webhooks are served on port with its self-issued
// certificate; the observer's configuration copies the caBundle of the
// operator's own one, as the chart installs them.
type benchObserver struct {
	port                      int
	ownConfig, observerConfig string
}

// Webhook metrics of kube-apiserver, labelled with the webhook's name: the
// time the API server spent on each call, and the calls that failed open
// (failurePolicy Ignore). Their counts together are every call it made.
const (
	apiServerWebhookDuration = "apiserver_admission_webhook_admission_duration_seconds"
	apiServerWebhookFailOpen = "apiserver_admission_webhook_fail_open_count"
)

// newBenchObserver creates the operator's own webhook configuration for
// run (its CommitRequest rule in namespace only), which the operator's
// certificate keeper fills and the observer's registrar copies from.
func newBenchObserver(ctx context.Context, e *benchEnv, run, namespace string) (benchObserver, error) {
	port, err := harness.FreePort()
	if err != nil {
		return benchObserver{}, err
	}
	o := benchObserver{port: port, ownConfig: "gitops-reverser-" + run, observerConfig: "gitops-reverser-observer-" + run}
	ignore, none := admissionregistrationv1.Ignore, admissionregistrationv1.SideEffectClassNone
	url := fmt.Sprintf("https://127.0.0.1:%d%s", port, admission.Path)
	timeout := int32(5)
	own := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: o.ownConfig},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "commitrequests.configbutler.ai",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url},
			FailurePolicy:           &ignore,
			SideEffects:             &none,
			TimeoutSeconds:          &timeout,
			AdmissionReviewVersions: []string{"v1"},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": namespace}},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{v1alpha3.GroupVersion.Group}, APIVersions: []string{"*"},
					Resources: []string{"commitrequests"}}}},
		}}}
	if err := e.client().Create(ctx, own); err != nil {
		return benchObserver{}, fmt.Errorf("creating the operator's webhook configuration %s: %w", o.ownConfig, err)
	}
	return o, nil
}

// operatorArgs make an operator run attribute from the observer alone
// (memory transport, one replica), reached by the API server at a URL.
func (o benchObserver) operatorArgs() []string {
	return []string{
		"--author-attribution=true",
		"--author-attribution-source=admission",
		"--admission-webhook-port=" + strconv.Itoa(o.port),
		"--admission-webhook-host=127.0.0.1",
		"--admission-webhook-service-host=127.0.0.1",
		"--admission-webhook-configuration=" + o.ownConfig,
		"--admission-observer-configuration=" + o.observerConfig,
		fmt.Sprintf("--admission-observer-url=https://127.0.0.1:%d", o.port),
	}
}

// waitServing waits until the API server reviews writes through the
// observer: its configuration names exactly resources with a caBundle,
// and then a probe write is reviewed (the observer's queued reviews
// rise). The API server reads webhook configurations through an informer
// of its own, so a registered configuration is not yet a called one.
func (o benchObserver) waitServing(ctx context.Context, e *benchEnv, op *operatorRun, probe func(ctx context.Context) error,
	resources ...string) error {
	registered := false
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := op.exited(); err != nil {
			return false, err
		}
		if !registered {
			var err error
			registered, err = o.registered(ctx, e, resources)
			return false, err
		}
		return reviewedBy(ctx, op, probe)
	})
	if wait.Interrupted(err) {
		return fmt.Errorf("the observer did not review writes within a minute (registered: %t; operator log %s)", registered, op.logPath)
	}
	return err
}

// registered reports whether the observer's configuration names exactly
// resources, every webhook with a caBundle.
func (o benchObserver) registered(ctx context.Context, e *benchEnv, resources []string) (bool, error) {
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	err := e.client().Get(ctx, client.ObjectKey{Name: o.observerConfig}, &vwc)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading the observer's configuration %s: %w", o.observerConfig, err)
	}
	var names []string
	for _, w := range vwc.Webhooks {
		if len(w.ClientConfig.CABundle) == 0 {
			return false, nil
		}
		for _, r := range w.Rules {
			names = append(names, r.Resources...)
		}
	}
	slices.Sort(names)
	want := slices.Sorted(slices.Values(resources))
	return slices.Equal(names, want), nil
}

// reviewedBy makes the probe write and reports whether the observer
// published a fact for it.
func reviewedBy(ctx context.Context, op *operatorRun, probe func(ctx context.Context) error) (bool, error) {
	before, err := op.scrape(ctx)
	if err != nil {
		return false, err
	}
	if err := probe(ctx); err != nil {
		return false, err
	}
	after, err := op.scrape(ctx)
	if err != nil {
		return false, err
	}
	return observerQueued(after) > observerQueued(before), nil
}

// observerQueued is how many reviews the observer turned into facts.
func observerQueued(s metricSamples) float64 {
	return s.sum("gitopsreverser_admission_observer_reviews_total", `outcome="`+string(observer.OutcomeQueued)+`"`)
}

// remove deletes both configurations. The API server may still call the
// observer for a moment (its informer); waitUnobserved waits that out.
func (o benchObserver) remove(ctx context.Context, e *benchEnv) error {
	for _, name := range []string{o.observerConfig, o.ownConfig} {
		vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := e.client().Delete(ctx, vwc); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting the webhook configuration %s: %w", name, err)
		}
	}
	return nil
}

// observerCalls is every call the API server made to the observer's
// webhooks so far, answered or failed open.
func observerCalls(s metricSamples) float64 {
	var calls float64
	for _, name := range []string{observer.WebhookNamespaced, observer.WebhookCluster} {
		calls += s.sum(apiServerWebhookDuration+"_count", `name="`+name+`"`) + s.sum(apiServerWebhookFailOpen, `name="`+name+`"`)
	}
	return calls
}

// observerCallSeconds is the API server's own time spent in answered
// calls to the observer.
func observerCallSeconds(s metricSamples) (seconds, calls float64) {
	for _, name := range []string{observer.WebhookNamespaced, observer.WebhookCluster} {
		seconds += s.sum(apiServerWebhookDuration+"_sum", `name="`+name+`"`)
		calls += s.sum(apiServerWebhookDuration+"_count", `name="`+name+`"`)
	}
	return seconds, calls
}

// waitUnobserved waits until a probe write no longer reaches the
// observer's webhooks, after their configuration was removed.
func waitUnobserved(ctx context.Context, e *benchEnv, probe func(ctx context.Context) error) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		before, err := e.apiServerMetrics(ctx)
		if err != nil {
			return false, err
		}
		if err := probe(ctx); err != nil {
			return false, err
		}
		after, err := e.apiServerMetrics(ctx)
		if err != nil {
			return false, err
		}
		return observerCalls(after) == observerCalls(before), nil
	})
	if wait.Interrupted(err) {
		return fmt.Errorf("the API server still called the observer a minute after its configuration was removed")
	}
	return err
}

// loadAverage is the machine's one-minute load average.
func loadAverage() (float64, error) {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, fmt.Errorf("reading the load average: %w", err)
	}
	fields := strings.Fields(string(raw))
	if len(fields) == 0 {
		return 0, fmt.Errorf("parsing /proc/loadavg %q", raw)
	}
	load, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return 0, fmt.Errorf("parsing /proc/loadavg %q: %w", raw, err)
	}
	return load, nil
}

// spread is the minimum, median and maximum of per-run figures.
type spread struct{ min, median, max float64 }

func spreadOf(values []float64) spread {
	if len(values) == 0 {
		return spread{}
	}
	sorted := slices.Sorted(slices.Values(values))
	return spread{min: sorted[0], median: sorted[(len(sorted)-1)/2], max: sorted[len(sorted)-1]}
}

// reportSpread records the median of per-run figures (against limit when
// it is above zero) and its minimum and maximum for information.
func (r reporter) reportSpread(what string, values []float64, unit string, limit float64) {
	r.b.Helper()
	s := spreadOf(values)
	r.upTo(what+", median of runs", s.median, unit, limit)
	r.info(what+", min of runs", s.min, unit)
	r.info(what+", max of runs", s.max, unit)
}

// observerEnv is the shared environment for scenario I, whose operator
// runs attribute: the profiled build runs configured-author mode only.
func observerEnv(b *testing.B) *benchEnv {
	b.Helper()
	e := sharedEnv(b)
	if e.profileDir != "" {
		b.Skip("the profiled build runs configured-author mode only")
	}
	return e
}

// observedRun is an operator run with the admission observer or without
// it. probe is a write in the mirrored namespace that tells whether the
// observer reviews writes.
type observedRun struct {
	op    *operatorRun
	obs   *benchObserver
	probe func(ctx context.Context) error
}

// startObservedRun starts an operator run for mirror m, with extra
// arguments: attributing from the observer alone when observed, else in
// configured-author mode.
func startObservedRun(b *testing.B, e *benchEnv, m *mirror, run string, observed bool, probe func(ctx context.Context) error,
	extra ...string) *observedRun {
	b.Helper()
	r := &observedRun{probe: probe}
	args := extra
	if observed {
		o, err := newBenchObserver(context.Background(), e, run, m.name)
		require.NoError(b, err)
		r.obs, args = &o, append(o.operatorArgs(), extra...)
	}
	op, err := startOperatorArgs(e, run, args...)
	require.NoError(b, err)
	r.op = op
	return r
}

// waitReviews waits until the observer reviews writes to resources, or,
// without the observer, until no write reaches its webhooks.
func (r *observedRun) waitReviews(b *testing.B, e *benchEnv, resources ...string) {
	b.Helper()
	ctx := context.Background()
	if r.obs != nil {
		require.NoError(b, r.obs.waitServing(ctx, e, r.op, r.probe, resources...))
		return
	}
	require.NoError(b, waitUnobserved(ctx, e, r.probe))
}

// stop stops the operator and, with the observer, removes its
// configurations and waits until the API server no longer calls it, so
// the next run starts unobserved.
func (r *observedRun) stop(b *testing.B, e *benchEnv) {
	b.Helper()
	stopOperator(b, r.op)
	if r.obs != nil {
		ctx := context.Background()
		require.NoError(b, r.obs.remove(ctx, e))
		require.NoError(b, waitUnobserved(ctx, e, r.probe))
	}
}
