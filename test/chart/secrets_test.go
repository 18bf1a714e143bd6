package chart

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
)

// secretRequest is one request the operator sent about Secrets.
type secretRequest struct {
	method, path, query, accept string
}

// readsValues is true for a list or watch that returns whole Secrets (a
// metadata-only one asks for PartialObjectMetadata).
func (r secretRequest) readsValues() bool {
	return r.method == http.MethodGet && r.isCollection() && !strings.Contains(r.accept, "as=PartialObjectMetadata")
}

// isCollection is a list or a watch, as opposed to a get of one Secret.
func (r secretRequest) isCollection() bool { return strings.HasSuffix(r.path, "/secrets") }

// namespace is the namespace the request is scoped to, "" cluster-wide.
func (r secretRequest) namespace() string {
	_, rest, ok := strings.Cut(r.path, "/namespaces/")
	if !ok {
		return ""
	}
	ns, _, _ := strings.Cut(rest, "/")
	return ns
}

// secretRecorder records every request about Secrets sent through a config.
type secretRecorder struct {
	mu       sync.Mutex
	requests []secretRequest
}

func (s *secretRecorder) wrap(cfg *rest.Config) *rest.Config {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if strings.Contains(req.URL.Path, "/secrets") {
				s.mu.Lock()
				s.requests = append(s.requests, secretRequest{method: req.Method, path: req.URL.Path,
					query: req.URL.RawQuery, accept: req.Header.Get("Accept")})
				s.mu.Unlock()
			}
			return rt.RoundTrip(req)
		})
	})
	return cfg
}

func (s *secretRecorder) recorded() []secretRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]secretRequest(nil), s.requests...)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// tokenProvider is a GitProvider in namespace reading the chart Git
// server's credentials from the Secret secretName, and that Secret.
func tokenProvider(namespace, name, repo, secretName string) (*v1alpha3.GitProvider, *corev1.Secret) {
	provider := &v1alpha3.GitProvider{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: v1alpha3.GitProviderSpec{
			URL:             env.git.HTTPURL(repo),
			Forge:           &v1alpha3.ForgeSpec{Type: v1alpha3.ForgeGit},
			SecretRef:       &v1alpha3.LocalObjectReference{Name: secretName},
			AllowedBranches: []string{"main"},
			Push:            v1alpha3.PushSpec{CommitWindow: &metav1.Duration{Duration: 300 * time.Millisecond}},
		}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: secretName},
		StringData: map[string]string{"username": gitUser, "password": gitPassword}}
	return provider, secret
}

func providerConditions(t *testing.T, ns, name string) []metav1.Condition {
	t.Helper()
	var gp v1alpha3.GitProvider
	if err := env.kube.Client().Get(ctx(t), client.ObjectKey{Namespace: ns, Name: name}, &gp); err != nil {
		return nil
	}
	return gp.Status.Conditions
}

func waitProviderReady(t *testing.T, ns, name string) {
	t.Helper()
	require.Eventually(t, func() bool {
		c := meta.FindStatusCondition(providerConditions(t, ns, name), v1alpha3.ConditionReady)
		return c != nil && c.Status == metav1.ConditionTrue
	}, 60*time.Second, 200*time.Millisecond, "GitProvider %s/%s Ready; conditions: %+v", ns, name, providerConditions(t, ns, name))
}

// TestTheOperatorCachesNoSecretData runs the operator with its Secret access
// limited to one credential namespace and records every request it makes
// about Secrets while a GitProvider there becomes Ready: every list and watch
// is metadata-only and scoped to the credential namespace or the operator's
// own; the value is read with a get of the one Secret.
func TestTheOperatorCachesNoSecretData(t *testing.T) {
	const opNS, team = "cache-operator", "cache-team"
	ensureCRDs(t)
	for _, ns := range []string{opNS, team, "cache-elsewhere"} {
		ensureNamespace(t, ns)
	}
	_, err := env.git.CreateBareRepo(team)
	require.NoError(t, err)
	provider, secret := tokenProvider(team, "repo", team, "git-credentials")
	create(t, secret, provider,
		// A Secret nothing references, in a namespace the operator was not
		// given: it must not be read or watched.
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "cache-elsewhere", Name: "unrelated"},
			StringData: map[string]string{"password": "not-for-the-operator"}})

	var recorder secretRecorder
	opts := operatorOptions(opNS, "unused")
	opts.Config = recorder.wrap(env.kube.Config()) // admin: this test is about what is asked, not granted
	opts.CredentialNamespaces = []string{team}
	startOperatorWith(t, opts)
	waitProviderReady(t, team, provider.Name)

	var gets, collections int
	for _, r := range recorder.recorded() {
		switch {
		case !r.isCollection():
			gets++
			require.Equal(t, team, r.namespace(), "a Secret get outside the credential namespace: %+v", r)
		default:
			collections++
			require.False(t, r.readsValues(), "a list or watch of whole Secrets: %+v", r)
			require.Contains(t, []string{team, opNS}, r.namespace(),
				"a Secret list or watch outside the credential and operator namespaces: %+v", r)
		}
	}
	require.NotZero(t, gets, "the credentials are read with a get")
	require.NotZero(t, collections, "Secret metadata is watched to notice a rotation")
}
