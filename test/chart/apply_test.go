package chart

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// realKinds are created for real; everything else (the workloads) is
// submitted as a server-side dry run: there is no kubelet or image to run it.
var realKinds = map[string]bool{
	"CustomResourceDefinition": true, "ServiceAccount": true, "Secret": true,
	"ClusterRole": true, "ClusterRoleBinding": true, "Role": true, "RoleBinding": true, "ConfigMap": true,
}

var crdsOnce sync.Mutex

// ensureCRDs applies the chart's crds/ (as helm install does before the
// templates) and waits until every CRD is Established.
func ensureCRDs(t *testing.T) {
	t.Helper()
	crdsOnce.Lock()
	defer crdsOnce.Unlock()
	objs := byKind(render(t, "crds", "default", "", "--include-crds"), "CustomResourceDefinition")
	require.Len(t, objs, 6, "the six configbutler.ai CRDs")
	for _, o := range objs {
		applyObject(t, o, false)
	}
	c := env.kube.Client()
	for _, o := range objs {
		require.Eventually(t, func() bool {
			var crd apiextensionsv1.CustomResourceDefinition
			if c.Get(ctx(t), client.ObjectKey{Name: o.GetName()}, &crd) != nil {
				return false
			}
			for _, cond := range crd.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true
				}
			}
			return false
		}, 30*time.Second, 100*time.Millisecond, "CRD %s Established", o.GetName())
	}
}

// applyObject server-side applies obj as the admin, for real or as a dry run.
func applyObject(t *testing.T, obj *unstructured.Unstructured, dryRun bool) {
	t.Helper()
	opts := []client.PatchOption{client.FieldOwner("chart-test"), client.ForceOwnership}
	if dryRun {
		opts = append(opts, client.DryRunAll)
	}
	obj = obj.DeepCopy()
	obj.SetManagedFields(nil)
	//nolint:staticcheck // server-side apply of arbitrary unstructured objects.
	err := env.kube.Client().Patch(ctx(t), obj, client.Apply, opts...)
	require.NoError(t, err, "applying %s %s/%s (dry run %v)", obj.GetKind(), obj.GetNamespace(), obj.GetName(), dryRun)
}

func ensureNamespace(t *testing.T, name string) {
	t.Helper()
	err := env.kube.Client().Create(ctx(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
}

// install applies a rendered release: CRDs, RBAC, ServiceAccount and Secret
// for real, workloads as a dry run. Objects whose kind is in skip are left
// out.
func install(t *testing.T, objs []*unstructured.Unstructured, skip ...string) {
	t.Helper()
	ensureCRDs(t)
	skipped := map[string]bool{}
	for _, k := range skip {
		skipped[k] = true
	}
	for _, o := range objs {
		if skipped[o.GetKind()] {
			continue
		}
		if ns := o.GetNamespace(); ns != "" {
			ensureNamespace(t, ns)
		}
		applyObject(t, o, !realKinds[o.GetKind()])
	}
}

func TestRenderedManifestsApply(t *testing.T) {
	for _, v := range variants() {
		if v.name == "serviceMonitor" {
			// Needs the Prometheus Operator's CRD, which this API server
			// does not have; rendering is covered by the template tests.
			continue
		}
		t.Run(v.name, func(t *testing.T) {
			ns := "apply-" + strings.ToLower(v.name)
			objs := render(t, "gr", ns, v.values)
			install(t, objs)
			// The real objects exist; the ClusterRole holds what was rendered.
			var sa corev1.ServiceAccount
			require.NoError(t, env.kube.Client().Get(ctx(t), client.ObjectKey{Namespace: ns, Name: "gr-gitops-reverser"}, &sa))
			for _, o := range objs {
				if !realKinds[o.GetKind()] {
					continue // dry run only
				}
				got := &unstructured.Unstructured{}
				got.SetGroupVersionKind(o.GroupVersionKind())
				require.NoError(t, env.kube.Client().Get(ctx(t), client.ObjectKeyFromObject(o), got), "%s %s", o.GetKind(), o.GetName())
			}
		})
	}
}
