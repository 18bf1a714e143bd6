package harness_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/configbutler/gitops-reverser/test/harness"
)

func startKube(t *testing.T, opts harness.KubeOptions) *harness.Kube {
	t.Helper()
	kube, err := harness.StartKube(opts)
	require.NoError(t, err)
	t.Cleanup(kube.Stop)
	return kube
}

// TestKubeActsAsOtherIdentitiesUnderRBAC proves RBAC is on and that
// ClientAs / ConfigAsServiceAccount are held to it.
func TestKubeActsAsOtherIdentitiesUnderRBAC(t *testing.T) {
	kube := startKube(t, harness.KubeOptions{SkipCRDs: true})
	ctx := context.Background()
	admin := kube.Client()
	require.NoError(t, admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}))

	alice, err := kube.ClientAs("alice")
	require.NoError(t, err)
	err = alice.List(ctx, &corev1.ConfigMapList{}, client.InNamespace("team-a"))
	require.True(t, apierrors.IsForbidden(err), "alice has no role yet: %v", err)

	require.NoError(t, admin.Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "cm-reader"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list"}}},
	}))
	require.NoError(t, admin.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "cm-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "cm-reader"},
		Subjects: []rbacv1.Subject{
			{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"},
			{Kind: rbacv1.ServiceAccountKind, Namespace: "team-a", Name: "mirror"},
		},
	}))
	// The authorizer reads roles from its own informers, so a new binding
	// takes effect a moment after it is stored: wait for it to apply.
	require.Eventually(t, func() bool {
		return alice.List(ctx, &corev1.ConfigMapList{}, client.InNamespace("team-a")) == nil
	}, 30*time.Second, 50*time.Millisecond, "alice may list ConfigMaps once the binding applies")

	sa, err := client.New(kube.ConfigAsServiceAccount("team-a", "mirror"), client.Options{Scheme: kube.Scheme()})
	require.NoError(t, err)
	require.NoError(t, sa.List(ctx, &corev1.ConfigMapList{}, client.InNamespace("team-a")))
	err = sa.List(ctx, &corev1.SecretList{}, client.InNamespace("team-a"))
	require.True(t, apierrors.IsForbidden(err), "the service account may not read Secrets: %v", err)
}

// TestKubeAuditWebhookDeliversEvents proves the audit flags: a write reaches
// a webhook as an audit.k8s.io EventList.
func TestKubeAuditWebhookDeliversEvents(t *testing.T) {
	batches := make(chan []byte, 16)
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		batches <- body
	}))
	t.Cleanup(sink.Close)

	dir := t.TempDir()
	policy := filepath.Join(dir, "policy.yaml")
	require.NoError(t, os.WriteFile(policy, []byte(`apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: Metadata
  resources: [{group: "", resources: [configmaps]}]
- level: None
`), 0o600))
	webhook := filepath.Join(dir, "webhook.yaml")
	require.NoError(t, os.WriteFile(webhook, []byte(`apiVersion: v1
kind: Config
clusters: [{name: sink, cluster: {server: "`+sink.URL+`"}}]
contexts: [{name: sink, context: {cluster: sink, user: ""}}]
current-context: sink
`), 0o600))

	kube := startKube(t, harness.KubeOptions{SkipCRDs: true, AuditPolicyFile: policy, AuditWebhookConfigFile: webhook,
		AuditBatchMaxWait: 200 * time.Millisecond})
	require.NoError(t, kube.Client().Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "audited"},
	}))
	deadline := time.After(20 * time.Second)
	for {
		select {
		case body := <-batches:
			var list struct {
				Kind  string `json:"kind"`
				Items []struct {
					Verb      string `json:"verb"`
					ObjectRef struct {
						Name string `json:"name"`
					} `json:"objectRef"`
				} `json:"items"`
			}
			require.NoError(t, json.Unmarshal(body, &list))
			require.Equal(t, "EventList", list.Kind)
			for _, item := range list.Items {
				if item.Verb == "create" && item.ObjectRef.Name == "audited" {
					return
				}
			}
		case <-deadline:
			require.FailNow(t, "no audit event for the ConfigMap create within 20s")
		}
	}
}

// TestKubeAuditWebhookPostsOverMutualTLSWithTheChartsPolicy proves the
// attribution setup the docs describe: with the chart's audit policy and a
// webhook kubeconfig carrying a client certificate, the API server posts a
// write's ResponseComplete event, with its response object, to a receiver
// that requires a certificate its client CA signed; reads are left out.
func TestKubeAuditWebhookPostsOverMutualTLSWithTheChartsPolicy(t *testing.T) {
	dir := t.TempDir()
	serverCA, err := harness.NewCA("audit ingress")
	require.NoError(t, err)
	clientCA, err := harness.NewCA("audit clients")
	require.NoError(t, err)
	serving, err := serverCA.Server(dir, "ingress", "127.0.0.1")
	require.NoError(t, err)
	apiserver, err := clientCA.Client(dir, "apiserver", "kube-apiserver")
	require.NoError(t, err)

	batches := make(chan []byte, 64)
	sink := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		batches <- body
	}))
	cert, err := tls.X509KeyPair(serving.CertPEM, serving.KeyPEM)
	require.NoError(t, err)
	clients := x509.NewCertPool()
	require.True(t, clients.AppendCertsFromPEM(clientCA.CertPEM))
	sink.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clients}
	sink.StartTLS()
	t.Cleanup(sink.Close)
	webhook, err := harness.WriteAuditWebhookConfig(dir, sink.URL+"/audit-webhook/default", serverCA.CertPEM, apiserver)
	require.NoError(t, err)

	kube := startKube(t, harness.KubeOptions{SkipCRDs: true, AuditPolicyFile: harness.AuditPolicyFile(),
		AuditWebhookConfigFile: webhook, AuditBatchMaxWait: 200 * time.Millisecond})
	ctx := context.Background()
	require.NoError(t, kube.Client().Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "audited"}}))
	deadline := time.After(20 * time.Second)
	for {
		select {
		case body := <-batches:
			var list struct {
				Items []struct {
					Stage          string          `json:"stage"`
					Verb           string          `json:"verb"`
					ResponseObject json.RawMessage `json:"responseObject"`
					ObjectRef      struct {
						Name string `json:"name"`
					} `json:"objectRef"`
				} `json:"items"`
			}
			require.NoError(t, json.Unmarshal(body, &list))
			for _, item := range list.Items {
				require.NotEqual(t, "RequestReceived", item.Stage, "the policy omits the RequestReceived stage")
				require.NotContains(t, []string{"get", "list", "watch"}, item.Verb, "the policy leaves reads out")
				if item.Verb == "create" && item.ObjectRef.Name == "audited" {
					require.Equal(t, "ResponseComplete", item.Stage)
					require.Contains(t, string(item.ResponseObject), `"resourceVersion"`, "the response object is in the event")
					return
				}
			}
		case <-deadline:
			require.FailNow(t, "no audit event for the ConfigMap create within 20s")
		}
	}
}
