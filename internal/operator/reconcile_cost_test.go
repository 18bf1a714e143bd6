package operator

import (
	"context"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/encryption"
	"github.com/configbutler/gitops-reverser/test/harness"
)

// secretGet is the path of a GET of one Secret: what reading a credential,
// a signing key or an age key costs. Lists and watches (the metadata
// informers) are not reads of a value.
var secretGet = regexp.MustCompile(`^/api/v1/namespaces/[^/]+/secrets/[^/]+$`)

// roundTripFunc adapts a function to http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestAReconcileWithNothingChangedReadsNoSecretAndOpensNoForge: a GitTarget
// with credentials and an age key is reconciled every resync; while
// nothing it is built from changes, those reconciles read no Secret from
// the API server and open no forge client (counted at the API server's
// door and by gitopsreverser_forge_clients_opened_total). A rotated
// credential is still noticed: the next reconcile opens a new client; so
// is a rotated age key Secret: the engine reads it again.
func TestAReconcileWithNothingChangedReadsNoSecretAndOpensNoForge(t *testing.T) {
	kube, git := startMirrorEnv(t)
	ctx := context.Background()
	c := kube.Client()
	identity, _, err := encryption.GenerateIdentity(time.Now())
	require.NoError(t, err)
	require.NoError(t, c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "age"},
		StringData: map[string]string{"team.agekey": identity}}))
	var target v1alpha3.GitTarget
	require.NoError(t, c.Get(ctx, keyOfTeamA("mirror"), &target))
	target.Spec.Encryption = &v1alpha3.EncryptionSpec{Age: v1alpha3.AgeEncryption{SecretRef: &v1alpha3.LocalObjectReference{Name: "age"}}}
	require.NoError(t, c.Update(ctx, &target))

	var secretReads, ageReads atomic.Int64
	cfg := rest.CopyConfig(kube.Config())
	cfg.WrapTransport = func(next http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodGet && secretGet.MatchString(r.URL.Path) {
				secretReads.Add(1)
				if strings.HasSuffix(r.URL.Path, "/secrets/age") {
					ageReads.Add(1)
				}
			}
			return next.RoundTrip(r)
		})
	}
	port, err := harness.FreePort()
	require.NoError(t, err)
	run := &runningOperator{operatorRun: &operatorRun{exited: make(chan struct{})}, reg: prometheus.NewRegistry()}
	runCtx, cancel := context.WithCancel(ctx)
	go func() {
		defer close(run.exited)
		run.err = Run(runCtx, Options{
			Config: cfg, MetricsAddr: "0", ProbeAddr: "127.0.0.1:" + strconv.Itoa(port),
			OperatorNamespace: "default", Registry: run.reg, SkipNameValidation: true, LeaderElect: false,
			TargetResync: 200 * time.Millisecond,
		})
	}()
	t.Cleanup(func() {
		cancel()
		<-run.exited
		require.NoError(t, run.err)
	})

	require.NoError(t, c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "sentinel"}}))
	run.waitFor(t, "the sentinel ConfigMap in Git", func() bool {
		_, err := git.Git("mirror", "cat-file", "-e", "main:clusters/dev/team-a/configmaps/sentinel.yaml")
		return err == nil
	})
	opened := func() float64 { return run.counter(t, "gitopsreverser_forge_clients_opened_total", nil) }
	reconciles := func() float64 {
		return counterIn(t, ctrlmetrics.Registry, "controller_runtime_reconcile_total", map[string]string{"controller": "gittarget"})
	}
	readsBefore, openedBefore, reconcilesBefore := secretReads.Load(), opened(), reconciles()
	run.waitFor(t, "five more GitTarget reconciles", func() bool { return reconciles() >= reconcilesBefore+5 })
	t.Logf("over %.0f reconciles: %d Secret reads, %.0f forge clients opened", reconciles()-reconcilesBefore,
		secretReads.Load()-readsBefore, opened()-openedBefore)
	require.Equal(t, readsBefore, secretReads.Load(), "reconciles with nothing changed read Secrets from the API server")
	require.Equal(t, openedBefore, opened(), "reconciles with nothing changed opened forge clients")

	var credentials corev1.Secret
	require.NoError(t, c.Get(ctx, keyOfTeamA("git-credentials"), &credentials))
	credentials.Labels = map[string]string{"rotated": "yes"}
	require.NoError(t, c.Update(ctx, &credentials))
	run.waitFor(t, "a forge client opened for the rotated credentials", func() bool { return opened() > openedBefore })

	// The engine builds the encryptor from the age key Secret: a new
	// version of it is read again.
	var key corev1.Secret
	require.NoError(t, c.Get(ctx, keyOfTeamA("age"), &key))
	key.Labels = map[string]string{"rotated": "yes"}
	agesBefore := ageReads.Load()
	require.NoError(t, c.Update(ctx, &key))
	run.waitFor(t, "the rotated age key Secret read", func() bool { return ageReads.Load() > agesBefore })
}

func keyOfTeamA(name string) types.NamespacedName {
	return types.NamespacedName{Namespace: "team-a", Name: name}
}
