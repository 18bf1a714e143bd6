package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/configbutler/gitops-reverser/internal/engine"
	"github.com/configbutler/gitops-reverser/internal/rules"
)

// sourceNamespaces lists src's namespaces for a rule's source-namespace
// policy. The operator's own cluster is read from the manager's cache: it
// holds every Namespace (the GitTarget controller watches them for label
// changes), so a reconcile started by a label change sees that change,
// and a reconcile costs no request. Another cluster is listed live.
func sourceNamespaces(ctx context.Context, cached client.Reader, src *engine.Source) ([]rules.NamespaceInfo, error) {
	if !src.Local {
		return src.Namespaces(ctx)
	}
	var list corev1.NamespaceList
	if err := cached.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing namespaces: %w", err)
	}
	return engine.NamespaceInfos(list.Items), nil
}
