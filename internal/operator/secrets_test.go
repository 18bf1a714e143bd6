package operator

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/configbutler/gitops-reverser/internal/kubescheme"
	"github.com/configbutler/gitops-reverser/test/harness"
)

// collectionRequests records the lists and watches of one resource sent
// through a config, as "<path> <Accept header> <query>".
type collectionRequests struct {
	resource string
	mu       sync.Mutex
	seen     []string
}

func (s *collectionRequests) roundTripper(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		if strings.HasSuffix(req.URL.Path, "/"+s.resource) {
			s.mu.Lock()
			s.seen = append(s.seen, req.URL.Path+" "+req.Header.Get("Accept")+" "+req.URL.RawQuery)
			s.mu.Unlock()
		}
		return rt.RoundTrip(req)
	})
}

func (s *collectionRequests) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...)
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// TestTheManagersCachesHoldNoSecretValue builds the manager with the
// operator's options: a Secret read through its (cached) client goes to the
// API server instead of starting an informer of whole Secrets, and the
// metadata informer the controllers watch lists the credential namespaces
// only, metadata only; so does the one of ConfigMaps.
func TestTheManagersCachesHoldNoSecretValue(t *testing.T) {
	kube, err := harness.StartKube(harness.KubeOptions{})
	require.NoError(t, err)
	t.Cleanup(kube.Stop)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	for _, ns := range []string{"team", "elsewhere"} {
		require.NoError(t, kube.Client().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	require.NoError(t, kube.Client().Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "creds"},
		StringData: map[string]string{"token": "team-token"}}))

	requests, configMapRequests := collectionRequests{resource: "secrets"}, collectionRequests{resource: "configmaps"}
	cfg := kube.Config()
	cfg.Wrap(requests.roundTripper)
	cfg.Wrap(configMapRequests.roundTripper)
	o := Options{Config: cfg, MetricsAddr: "0", ProbeAddr: "0", OperatorNamespace: "default", CredentialNamespaces: []string{"team"}}
	scheme, err := kubescheme.New()
	require.NoError(t, err)
	mgr, err := ctrl.NewManager(cfg, managerOptions(o, scheme))
	require.NoError(t, err)
	// The controllers' metadata watch of Secrets.
	secretMetadata := &metav1.PartialObjectMetadata{}
	secretMetadata.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	_, err = mgr.GetCache().GetInformer(ctx, secretMetadata)
	require.NoError(t, err)
	// The GitProvider controller's metadata watch of ConfigMaps (known_hosts).
	configMapMetadata := &metav1.PartialObjectMetadata{}
	configMapMetadata.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	_, err = mgr.GetCache().GetInformer(ctx, configMapMetadata)
	require.NoError(t, err)
	go func() { _ = mgr.Start(ctx) }()
	require.True(t, mgr.GetCache().WaitForCacheSync(ctx))

	var secret corev1.Secret
	require.NoError(t, mgr.GetClient().Get(ctx, client.ObjectKey{Namespace: "team", Name: "creds"}, &secret))
	require.Equal(t, "team-token", string(secret.Data["token"]))
	var secrets corev1.SecretList
	require.NoError(t, mgr.GetClient().List(ctx, &secrets, client.InNamespace("team")))

	lists := requests.list()
	require.NotEmpty(t, lists)
	wholeLists := 0
	for _, r := range lists {
		path, rest, _ := strings.Cut(r, " ")
		accept, query, _ := strings.Cut(rest, " ")
		if !strings.Contains(accept, "as=PartialObjectMetadata") {
			// Only the client's own List, sent to the API server as is: no
			// informer lists or watches whole Secrets.
			require.NotContains(t, query, "watch=true", "a watch of whole Secrets: %s", r)
			require.Equal(t, "/api/v1/namespaces/team/secrets", path, "%s", r)
			wholeLists++
			continue
		}
		require.Contains(t, []string{"/api/v1/namespaces/team/secrets", "/api/v1/namespaces/default/secrets"}, path,
			"the metadata watch outside the credential and operator namespaces: %s", r)
	}
	require.Equal(t, 1, wholeLists, "the client's List, once: %v", lists)

	configMapLists := configMapRequests.list()
	require.NotEmpty(t, configMapLists)
	for _, r := range configMapLists {
		path, _, _ := strings.Cut(r, " ")
		require.Contains(t, []string{"/api/v1/namespaces/team/configmaps", "/api/v1/namespaces/default/configmaps"}, path,
			"the ConfigMap metadata watch outside the credential and operator namespaces: %s", r)
	}
}
