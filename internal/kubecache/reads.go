package kubecache

import (
	"context"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Get and List first wait for the informer of the object's kind on its
// done channel. The inner cache waits for an informer that is still
// listing by looking every 100 ms, and a watch source's map function reads
// at start (the GitTarget controller's, reading GitTargets while their
// informer was listing, took 100 ms of a warm start). Before Start they
// read as the inner cache does.

// Get reads obj by key from the cache.
func (c *Cache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if c.started.Load() {
		if _, err := c.GetInformer(ctx, obj); err != nil {
			return err
		}
	}
	return c.Cache.Get(ctx, key, obj, opts...)
}

// List reads the objects of list's kind from the cache.
func (c *Cache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if c.started.Load() {
		if item, ok := c.itemOf(list); ok {
			if _, err := c.GetInformer(ctx, item); err != nil {
				return err
			}
		}
	}
	return c.Cache.List(ctx, list, opts...)
}

// itemOf is an empty object of the kind list holds, as the inner cache
// finds its informer: metadata only and unstructured lists keep their kind
// of informer. false when the kind is not known; the inner cache then
// answers for itself.
func (c *Cache) itemOf(list client.ObjectList) (client.Object, bool) {
	if c.scheme == nil {
		return nil, false
	}
	gvk, err := apiutil.GVKForObject(list, c.scheme)
	if err != nil || !strings.HasSuffix(gvk.Kind, "List") {
		return nil, false
	}
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	switch list.(type) {
	case *metav1.PartialObjectMetadataList:
		item := &metav1.PartialObjectMetadata{}
		item.SetGroupVersionKind(gvk)
		return item, true
	case *unstructured.UnstructuredList:
		item := &unstructured.Unstructured{}
		item.SetGroupVersionKind(gvk)
		return item, true
	}
	created, err := c.scheme.New(gvk)
	if err != nil {
		return nil, false
	}
	item, ok := created.(client.Object)
	return item, ok
}
