package kubecache

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A list's informer is the one the inner cache reads it from: structured,
// metadata only or unstructured, of the list's item kind.
func TestTheItemOfAListAsksForTheInformerTheListIsReadFrom(t *testing.T) {
	c := Wrap(nil, clientgoscheme.Scheme)
	configMaps := corev1.SchemeGroupVersion.WithKind("ConfigMapList")
	metadata := &metav1.PartialObjectMetadataList{}
	metadata.SetGroupVersionKind(configMaps)
	generic := &unstructured.UnstructuredList{}
	generic.SetGroupVersionKind(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "WidgetList"})

	for _, tc := range []struct {
		name string
		list client.ObjectList
		want string
	}{
		{"structured", &corev1.ConfigMapList{}, "*v1.ConfigMap"},
		{"metadata only", metadata, "*v1.PartialObjectMetadata /v1, Kind=ConfigMap"},
		{"unstructured", generic, "*unstructured.Unstructured example.com/v1, Kind=Widget"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			item, ok := c.itemOf(tc.list)
			require.True(t, ok)
			require.Equal(t, tc.want, kindKey(item))
		})
	}
	unknown := &unstructured.UnstructuredList{}
	_, ok := c.itemOf(unknown)
	require.False(t, ok, "a list without a kind is left to the inner cache")
}
