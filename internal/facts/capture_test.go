//go:build auditcapture

package facts_test

// TestCaptureAuditEvents regenerates testdata/audit: it starts the real
// kube-apiserver with its audit webhook pointed at a local sink, makes one
// kind of write per scenario (each with its own user agent), and writes the
// EventList the apiserver sent for each scenario, exactly as received.
//
//	go test -tags auditcapture ./internal/facts/ -run TestCaptureAuditEvents -count=1

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/configbutler/gitops-reverser/test/harness"
)

const captureNS = "team-a"

func TestCaptureAuditEvents(t *testing.T) {
	var mu sync.Mutex
	byAgent := map[string][]json.RawMessage{}
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var list struct {
			Items []json.RawMessage `json:"items"`
		}
		if json.Unmarshal(body, &list) == nil {
			mu.Lock()
			for _, item := range list.Items {
				var ev struct {
					UserAgent string `json:"userAgent"`
				}
				_ = json.Unmarshal(item, &ev)
				if scenario, ok := strings.CutPrefix(ev.UserAgent, "capture/"); ok {
					byAgent[scenario] = append(byAgent[scenario], item)
				}
			}
			mu.Unlock()
		}
	}))
	t.Cleanup(sink.Close)

	dir := t.TempDir()
	policy := filepath.Join(dir, "policy.yaml")
	require.NoError(t, os.WriteFile(policy, []byte(`apiVersion: audit.k8s.io/v1
kind: Policy
omitManagedFields: true
rules:
- level: RequestResponse
  resources:
  - {group: "", resources: [configmaps]}
  - {group: "apps", resources: [deployments, deployments/scale, deployments/status]}
- level: None
`), 0o600))
	webhook := filepath.Join(dir, "webhook.yaml")
	require.NoError(t, os.WriteFile(webhook, []byte(`apiVersion: v1
kind: Config
clusters: [{name: sink, cluster: {server: "`+sink.URL+`"}}]
contexts: [{name: sink, context: {cluster: sink, user: ""}}]
current-context: sink
`), 0o600))
	kube, err := harness.StartKube(harness.KubeOptions{SkipCRDs: true, AuditPolicyFile: policy,
		AuditWebhookConfigFile: webhook, AuditBatchMaxWait: 200 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(kube.Stop)

	ctx := context.Background()
	as := func(scenario string, cfg *rest.Config) *kubernetes.Clientset {
		if cfg == nil {
			cfg = kube.Config()
		}
		cfg.UserAgent = "capture/" + scenario
		c, err := kubernetes.NewForConfig(cfg)
		require.NoError(t, err)
		return c
	}
	admin := as("setup", nil)
	_, err = admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: captureNS}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "capture-admins"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "alice@example.com"},
			{Kind: "ServiceAccount", Namespace: captureNS, Name: "finalizer-remover"}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	cms := func(c *kubernetes.Clientset) typedConfigMaps { return c.CoreV1().ConfigMaps(captureNS) }
	cm := func(name string, data map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: captureNS}, Data: data}
	}

	created, err := cms(as("create", nil)).Create(ctx, cm("app-config", map[string]string{"a": "1"}), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cms(as("create_conflict", nil)).Create(ctx, cm("app-config", nil), metav1.CreateOptions{})
	require.Error(t, err)
	_, err = cms(as("create_dry_run", nil)).Create(ctx, cm("dry", nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	require.NoError(t, err)
	_, err = cms(as("read", nil)).Get(ctx, "app-config", metav1.GetOptions{})
	require.NoError(t, err)

	created.Data = map[string]string{"a": "2"}
	updated, err := cms(as("update", nil)).Update(ctx, created, metav1.UpdateOptions{})
	require.NoError(t, err)
	_, err = cms(as("update_noop", nil)).Update(ctx, updated, metav1.UpdateOptions{})
	require.NoError(t, err)
	_, err = cms(as("merge_patch", nil)).Patch(ctx, "app-config", types.MergePatchType, []byte(`{"data":{"b":"3"}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	apply := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"app-config","namespace":"team-a"},"data":{"c":"4"}}`)
	_, err = cms(as("apply", nil)).Patch(ctx, "app-config", types.ApplyPatchType, apply, metav1.PatchOptions{FieldManager: "capture"})
	require.NoError(t, err)
	_, err = cms(as("apply_noop", nil)).Patch(ctx, "app-config", types.ApplyPatchType, apply, metav1.PatchOptions{FieldManager: "capture"})
	require.NoError(t, err)
	_, err = cms(as("generate_name", nil)).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "gen-", Namespace: captureNS}}, metav1.CreateOptions{})
	require.NoError(t, err)

	impersonated := kube.Config()
	impersonated.Impersonate = rest.ImpersonationConfig{UserName: "alice@example.com", Groups: []string{"developers"},
		Extra: map[string][]string{"configbutler.ai/claims/display-name": {"Alice Liddell"}, "configbutler.ai/claims/email": {"alice@example.com"}}}
	_, err = cms(as("impersonated_create", impersonated)).Create(ctx, cm("alice-config", nil), metav1.CreateOptions{})
	require.NoError(t, err)

	require.NoError(t, cms(as("delete", nil)).Delete(ctx, "app-config", metav1.DeleteOptions{}))

	fin := cm("guarded", nil)
	fin.Finalizers = []string{"example.com/guard"}
	_, err = cms(as("setup", nil)).Create(ctx, fin, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, cms(as("delete_with_finalizer", nil)).Delete(ctx, "guarded", metav1.DeleteOptions{}))
	remover := kube.ConfigAsServiceAccount(captureNS, "finalizer-remover")
	_, err = cms(as("finalizer_removal", remover)).Patch(ctx, "guarded", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	require.NoError(t, err)

	for _, name := range []string{"batch-1", "batch-2", "batch-3"} {
		c := cm(name, nil)
		c.Labels = map[string]string{"batch": "yes"}
		_, err = cms(as("setup", nil)).Create(ctx, c, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	require.NoError(t, cms(as("deletecollection", nil)).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "batch=yes"}))

	replicas := int32(1)
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: captureNS}, Spec: appsv1.DeploymentSpec{
		Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}}}}}
	dep, err = as("setup", nil).AppsV1().Deployments(captureNS).Create(ctx, dep, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = as("scale", nil).AppsV1().Deployments(captureNS).UpdateScale(ctx, "web", &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: captureNS}, Spec: autoscalingv1.ScaleSpec{Replicas: 3}}, metav1.UpdateOptions{})
	require.NoError(t, err)
	dep, err = admin.AppsV1().Deployments(captureNS).Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	dep.Status.ObservedGeneration = dep.Generation
	_, err = as("status_update", nil).AppsV1().Deployments(captureNS).UpdateStatus(ctx, dep, metav1.UpdateOptions{})
	require.NoError(t, err)

	// The last scenario's ResponseComplete marks that every batch before it arrived.
	_, err = cms(as("sentinel", nil)).Create(ctx, cm("sentinel", nil), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, item := range byAgent["sentinel"] {
			if strings.Contains(string(item), `"stage":"ResponseComplete"`) {
				return true
			}
		}
		return false
	}, 30*time.Second, 50*time.Millisecond)

	mu.Lock()
	defer mu.Unlock()
	for scenario, items := range byAgent {
		if scenario == "setup" || scenario == "sentinel" {
			continue
		}
		list := map[string]any{"kind": "EventList", "apiVersion": "audit.k8s.io/v1", "metadata": map[string]any{}, "items": items}
		out, err := json.MarshalIndent(list, "", "  ")
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join("testdata", "audit", scenario+".json"), append(out, '\n'), 0o644))
	}
}

type typedConfigMaps = interface {
	Create(context.Context, *corev1.ConfigMap, metav1.CreateOptions) (*corev1.ConfigMap, error)
	Update(context.Context, *corev1.ConfigMap, metav1.UpdateOptions) (*corev1.ConfigMap, error)
	Get(context.Context, string, metav1.GetOptions) (*corev1.ConfigMap, error)
	Delete(context.Context, string, metav1.DeleteOptions) error
	DeleteCollection(context.Context, metav1.DeleteOptions, metav1.ListOptions) error
	Patch(context.Context, string, types.PatchType, []byte, metav1.PatchOptions, ...string) (*corev1.ConfigMap, error)
}
