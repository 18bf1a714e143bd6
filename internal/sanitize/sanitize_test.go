package sanitize_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/configbutler/gitops-reverser/internal/sanitize"
)

// liveDeployment is a Deployment as a watch delivers it: full of runtime
// state next to the desired state.
func liveDeployment() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata": map[string]interface{}{
			"name":                       "api",
			"namespace":                  "team-a",
			"uid":                        "0b6a3c1e-5d1c-4f3a-9d7e-1f2e3d4c5b6a",
			"resourceVersion":            "48213",
			"generation":                 int64(7),
			"creationTimestamp":          "2026-06-30T12:00:00Z",
			"deletionTimestamp":          "2026-06-30T13:00:00Z",
			"deletionGracePeriodSeconds": int64(30),
			"selfLink":                   "/apis/apps/v1/namespaces/team-a/deployments/api",
			"generateName":               "api-",
			"finalizers":                 []interface{}{"example.com/cleanup"},
			"ownerReferences": []interface{}{map[string]interface{}{
				"apiVersion": "example.com/v1", "kind": "App", "name": "api", "uid": "1",
			}},
			"managedFields": []interface{}{map[string]interface{}{
				"manager": "kubectl", "operation": "Apply", "fieldsV1": map[string]interface{}{"f:spec": map[string]interface{}{}},
			}},
			"labels": map[string]interface{}{"app": "api"},
			"annotations": map[string]interface{}{
				"kubectl.kubernetes.io/last-applied-configuration": `{"apiVersion":"apps/v1"}`,
				"deployment.kubernetes.io/revision":                "7",
				"control-plane.alpha.kubernetes.io/leader":         `{"holderIdentity":"x"}`,
				"team.example.com/owner":                           "alice",
			},
		},
		"spec": map[string]interface{}{
			"replicas": int64(3),
			"template": map[string]interface{}{
				"metadata": map[string]interface{}{
					"creationTimestamp": nil,
					"labels":            map[string]interface{}{"app": "api"},
					"annotations":       map[string]interface{}{"kubectl.kubernetes.io/restartedAt": "2026-06-30T11:00:00Z"},
				},
				"spec": map[string]interface{}{
					"containers": []interface{}{map[string]interface{}{"name": "api", "image": "api:1.2.3"}},
				},
			},
		},
		"status": map[string]interface{}{"replicas": int64(3), "readyReplicas": int64(2)},
	}}
}

func TestSanitizeKeepsOnlyDesiredState(t *testing.T) {
	got := sanitize.Sanitize(liveDeployment())

	require.Equal(t, map[string]interface{}{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata": map[string]interface{}{
			"name":        "api",
			"namespace":   "team-a",
			"labels":      map[string]interface{}{"app": "api"},
			"annotations": map[string]interface{}{"team.example.com/owner": "alice"},
		},
		"spec": map[string]interface{}{
			"replicas": int64(3),
			"template": map[string]interface{}{
				"metadata": map[string]interface{}{
					"labels": map[string]interface{}{"app": "api"},
					// restartedAt is desired state: it is what rolls the pods.
					"annotations": map[string]interface{}{"kubectl.kubernetes.io/restartedAt": "2026-06-30T11:00:00Z"},
				},
				"spec": map[string]interface{}{
					"containers": []interface{}{map[string]interface{}{"name": "api", "image": "api:1.2.3"}},
				},
			},
		},
	}, got.Object)
}

func TestSanitizeKeepsConfigMapAndSecretPayloads(t *testing.T) {
	tests := []struct {
		name string
		obj  map[string]interface{}
	}{
		{"configmap data and binaryData", map[string]interface{}{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata":   map[string]interface{}{"name": "app-config", "namespace": "team-a"},
			"data":       map[string]interface{}{"app.properties": "a=1\nb=2\n"},
			"binaryData": map[string]interface{}{"logo.png": "iVBORw0KGgo="},
			"immutable":  true,
		}},
		{"secret data and type", map[string]interface{}{
			"apiVersion": "v1", "kind": "Secret",
			"metadata":   map[string]interface{}{"name": "db", "namespace": "team-a"},
			"data":       map[string]interface{}{"password": "aHVudGVyMg=="},
			"stringData": map[string]interface{}{"user": "admin"},
			"type":       "Opaque",
		}},
		{"cluster-scoped rbac", map[string]interface{}{
			"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
			"metadata": map[string]interface{}{"name": "reader"},
			"rules":    []interface{}{map[string]interface{}{"verbs": []interface{}{"get"}}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := sanitize.Sanitize(&unstructured.Unstructured{Object: tt.obj})
			require.Equal(t, tt.obj, got.Object)
		})
	}
}

func TestSanitizeRemovesEmptyMetadataValues(t *testing.T) {
	tests := []struct {
		name string
		meta map[string]interface{}
		want map[string]interface{}
	}{
		{
			name: "empty labels and annotations",
			meta: map[string]interface{}{"name": "a", "labels": map[string]interface{}{}, "annotations": map[string]interface{}{}},
			want: map[string]interface{}{"name": "a"},
		},
		{
			name: "annotations empty once volatile ones are gone",
			meta: map[string]interface{}{"name": "a", "annotations": map[string]interface{}{"deployment.kubernetes.io/revision": "3"}},
			want: map[string]interface{}{"name": "a"},
		},
		{
			name: "empty namespace on a cluster-scoped object",
			meta: map[string]interface{}{"name": "a", "namespace": ""},
			want: map[string]interface{}{"name": "a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "Namespace", "metadata": tt.meta}}
			require.Equal(t, tt.want, sanitize.Sanitize(obj).Object["metadata"])
		})
	}
}

func TestSanitizeDropsOnlyNullCreationTimestampsInEmbeddedMetadata(t *testing.T) {
	obj := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "apps/v1", "kind": "StatefulSet",
		"metadata": map[string]interface{}{"name": "db"},
		"spec": map[string]interface{}{
			"template": map[string]interface{}{"metadata": map[string]interface{}{"creationTimestamp": nil}},
			"volumeClaimTemplates": []interface{}{map[string]interface{}{
				"metadata": map[string]interface{}{"name": "data", "creationTimestamp": nil},
			}},
			"custom": map[string]interface{}{"metadata": map[string]interface{}{"creationTimestamp": "kept: not null"}},
		},
	}}

	spec := sanitize.Sanitize(obj).Object["spec"].(map[string]interface{})

	require.Equal(t, map[string]interface{}{
		"template":             map[string]interface{}{"metadata": map[string]interface{}{}},
		"volumeClaimTemplates": []interface{}{map[string]interface{}{"metadata": map[string]interface{}{"name": "data"}}},
		"custom":               map[string]interface{}{"metadata": map[string]interface{}{"creationTimestamp": "kept: not null"}},
	}, spec)
}

func TestSanitizeLeavesItsInputAlone(t *testing.T) {
	live := liveDeployment()
	before := liveDeployment()

	got := sanitize.Sanitize(live)
	got.Object["spec"].(map[string]interface{})["replicas"] = int64(99)
	got.Object["metadata"].(map[string]interface{})["labels"].(map[string]interface{})["app"] = "changed"

	require.Equal(t, before.Object, live.Object, "the input is not modified, and the copy shares nothing with it")
}

func TestSanitizeToleratesNilAndHandSetScalars(t *testing.T) {
	require.Nil(t, sanitize.Sanitize(nil))

	// runtime.DeepCopyJSON panics on a plain int; Sanitize copies it by value.
	obj := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]interface{}{"name": "a"},
		"spec": map[string]interface{}{"n": 3}, "status": map[string]interface{}{"n": 4},
	}}
	require.Equal(t, map[string]interface{}{"n": 3}, sanitize.Sanitize(obj).Object["spec"])
}

func TestIdentityOf(t *testing.T) {
	id := sanitize.IdentityOf(liveDeployment())
	require.Equal(t, sanitize.Identity{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "team-a", Name: "api"}, id)
	require.Equal(t, "apps/Deployment team-a/api", id.String())
	require.Equal(t, "core/Namespace prod", sanitize.Identity{Version: "v1", Kind: "Namespace", Name: "prod"}.String())
}
