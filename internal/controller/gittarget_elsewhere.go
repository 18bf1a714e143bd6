package controller

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/engine"
)

// noteClaimsElsewhere compiles the claims of a GitTarget another replica
// runs, when it reads the operator's own cluster, and notes them with the
// engine (Engine.NoteClaims): the admission observer's registration is
// written by one elected replica for the targets of every replica. It sets
// no condition and writes no status: the owner reports the target. A
// target that reads another cluster, or that its ClusterProvider does not
// admit, claims nothing here.
func (r *GitTargetReconciler) noteClaimsElsewhere(ctx context.Context, t *v1alpha3.GitTarget) (reconcile.Result, error) {
	if !r.NoteClaimsElsewhere {
		return reconcile.Result{}, nil
	}
	var cp v1alpha3.ClusterProvider
	err := r.Client.Get(ctx, ctrl.ObjectKey{Name: t.Spec.ClusterProviderName()}, &cp)
	if apierrors.IsNotFound(err) || (err == nil && (cp.Spec.KubeConfig != nil || !r.namespaceAdmitted(ctx, &cp, t.Namespace))) {
		r.Engine.NoteClaims(keyOf(t), nil)
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("reading ClusterProvider %s: %w", t.Spec.ClusterProviderName(), err)
	}
	sc, err := sourceConfig(ctx, r.SecretReader, r.LocalConfig, r.OperatorNamespace, &cp)
	if err != nil {
		return reconcile.Result{}, err
	}
	src, err := r.Engine.EnsureSource(ctx, cp.Name, sc)
	if errors.Is(err, engine.ErrNotStarted) {
		r.Engine.RetryWhenStarted(keyOf(t))
		return reconcile.Result{RequeueAfter: retryShort}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	run := &targetRun{target: t, source: src}
	if err := r.resolveRules(ctx, run); err != nil {
		return reconcile.Result{}, err
	}
	r.Engine.NoteClaims(keyOf(t), run.spec.Claims)
	// The API surface can change what the rules resolve to, as for the
	// owner's resync.
	return reconcile.Result{RequeueAfter: r.resync()}, nil
}
