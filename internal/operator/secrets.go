package operator

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// credentialNamespaces are the namespaces whose Secrets the operator reads
// and watches (metadata only): o.CredentialNamespaces and the operator's
// own namespace (remote kubeconfigs), sorted, without duplicates. nil means
// every namespace, the default when none are configured.
func credentialNamespaces(o Options) []string {
	if len(o.CredentialNamespaces) == 0 {
		return nil
	}
	namespaces := slices.Clone(o.CredentialNamespaces)
	if o.OperatorNamespace != "" {
		namespaces = append(namespaces, o.OperatorNamespace)
	}
	slices.Sort(namespaces)
	return slices.Compact(namespaces)
}

// credentialCache scopes the manager's Secret and ConfigMap informers (the
// GitProvider and ClusterProvider controllers' metadata-only watches, for a
// changed credential or known_hosts) to the credential namespaces, so RBAC
// granted per namespace is enough to run them, and a cluster of many
// ConfigMaps is not listed at every start to watch the few a GitProvider
// references. Their values are read uncached (the APIReader), so nothing
// else reads ConfigMaps through the cache. nil (every namespace) keeps the
// cluster-wide watches.
func credentialCache(namespaces []string) map[client.Object]cache.ByObject {
	if namespaces == nil {
		return nil
	}
	scoped := make(map[string]cache.Config, len(namespaces))
	for _, ns := range namespaces {
		scoped[ns] = cache.Config{}
	}
	return map[client.Object]cache.ByObject{
		&corev1.Secret{}:    {Namespaces: scoped},
		&corev1.ConfigMap{}: {Namespaces: scoped},
	}
}

// uncachedSecrets makes the manager's client read Secrets from the API
// server: a Get of a full Secret through it would otherwise start an
// informer that lists and keeps every Secret's data. Values are read with
// the APIReader anyway; this keeps a future slip from filling the cache.
func uncachedSecrets() client.Options {
	return client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}}
}
