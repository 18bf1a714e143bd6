package kubecache

import (
	"context"
	"reflect"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Get and List first wait for the informer of the object's kind on its
// done channel. The inner cache waits for an informer that is still
// listing by looking every 100 ms, and a watch source's map function reads
// at start (the GitTarget controller's, reading GitTargets while their
// informer was listing, took 100 ms of a warm start). Before Start they
// read as the inner cache does. A type found synced once is not looked up
// again: an informer, once synced, stays so until it is removed.

// Get reads obj by key from the cache.
func (c *Cache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := c.awaitRead(ctx, obj, func() (client.Object, bool) { return obj, true }); err != nil {
		return err
	}
	return c.Cache.Get(ctx, key, obj, opts...)
}

// List reads the objects of list's kind from the cache.
func (c *Cache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := c.awaitRead(ctx, list, func() (client.Object, bool) { return c.itemOf(list) }); err != nil {
		return err
	}
	return c.Cache.List(ctx, list, opts...)
}

// readKey names what a read reads: its Go type and the kind it carries
// (the generic types carry theirs; a typed object's is often empty, and
// its type says it).
type readKey struct {
	typ reflect.Type
	gvk schema.GroupVersionKind
}

// awaitRead waits, once the cache runs, for the informer of the object
// item returns, unless a read of read's type found it synced before.
func (c *Cache) awaitRead(ctx context.Context, read runtime.Object, item func() (client.Object, bool)) error {
	if !c.started() {
		return nil
	}
	key := readKey{typ: reflect.TypeOf(read), gvk: read.GetObjectKind().GroupVersionKind()}
	if _, synced := c.syncedReads.Load(key); synced {
		return nil
	}
	obj, ok := item()
	if !ok {
		return nil
	}
	if _, err := c.GetInformer(ctx, obj); err != nil {
		return err
	}
	c.syncedReads.Store(key, struct{}{})
	return nil
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
