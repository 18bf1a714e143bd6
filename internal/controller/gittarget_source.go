package controller

import (
	"context"
	"errors"
	"fmt"
	"k8s.io/apimachinery/pkg/types"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/engine"
	"github.com/configbutler/gitops-reverser/internal/rules"
)

// connectSource sets ClusterProviderReady (False/ClusterProviderNotFound or
// NamespaceNotAllowed: Stalled) and SourceClusterReachable
// (False/SourceUnreachable: Reconciling) for spec.clusterProviderRef, and
// connects the engine to the source.
func (r *GitTargetReconciler) connectSource(ctx context.Context, run *targetRun) error {
	t := run.target
	var cp v1alpha3.ClusterProvider
	err := r.Client.Get(ctx, ctrl.ObjectKey{Name: t.Spec.ClusterProviderName()}, &cp)
	if apierrors.IsNotFound(err) {
		r.Engine.RemoveTarget(ctx, keyOf(t))
		run.conds.block(v1alpha3.ConditionClusterProviderReady, v1alpha3.ReasonClusterProviderNotFound,
			fmt.Sprintf("ClusterProvider %q does not exist; create it (no spec.kubeConfig mirrors this cluster) with spec.allowedNamespaces admitting %q",
				t.Spec.ClusterProviderName(), t.Namespace))
		return errStop
	}
	if err != nil {
		return fmt.Errorf("reading ClusterProvider %s: %w", t.Spec.ClusterProviderName(), err)
	}
	if !r.namespaceAdmitted(ctx, &cp, t.Namespace) {
		r.Engine.RemoveTarget(ctx, keyOf(t))
		run.conds.block(v1alpha3.ConditionClusterProviderReady, v1alpha3.ReasonNamespaceNotAllowed,
			fmt.Sprintf("ClusterProvider %s's spec.allowedNamespaces does not admit namespace %q", cp.Name, t.Namespace))
		return errStop
	}
	sc, err := sourceConfig(ctx, r.SecretReader, r.LocalConfig, r.OperatorNamespace, &cp)
	if err != nil {
		r.Engine.RemoveTarget(ctx, keyOf(t))
		run.conds.block(v1alpha3.ConditionClusterProviderReady, sourceConfigReason(err), err.Error())
		return errStop
	}
	run.conds.setBool(v1alpha3.ConditionClusterProviderReady, true, v1alpha3.ReasonSucceeded, "ClusterProvider "+cp.Name+" admits this namespace")
	src, err := r.Engine.EnsureSource(ctx, cp.Name, sc)
	if err != nil {
		run.conds.wait(v1alpha3.ConditionSourceClusterReachable, v1alpha3.ReasonSourceUnreachable, err.Error())
		run.requeue = retryShort
		return errStop
	}
	run.conds.setBool(v1alpha3.ConditionSourceClusterReachable, true, v1alpha3.ReasonSucceeded, "the source API server answers")
	run.source = src
	run.spec.Source = cp.Name
	run.spec.OperatorSecrets = nil
	if cp.Spec.KubeConfig == nil {
		if run.spec.OperatorSecrets, err = r.operatorSecrets(ctx); err != nil {
			return err
		}
	}
	return nil
}

// operatorSecrets names every control-cluster Secret that holds the
// operator's credentials or keys: each GitProvider's credentials and
// signing key, each GitTarget's age key, and each ClusterProvider's
// kubeconfig. A target that mirrors Secrets of the control cluster would
// otherwise commit them (encrypted, but readable by every recipient of that
// target, who need not be trusted with another tenant's keys).
func (r *GitTargetReconciler) operatorSecrets(ctx context.Context) ([]types.NamespacedName, error) {
	var names []types.NamespacedName
	add := func(namespace, name string) {
		names = append(names, types.NamespacedName{Namespace: namespace, Name: name})
	}
	var providers v1alpha3.GitProviderList
	if err := r.Client.List(ctx, &providers); err != nil {
		return nil, fmt.Errorf("listing GitProviders: %w", err)
	}
	for _, gp := range providers.Items {
		if gp.Spec.SecretRef != nil {
			add(gp.Namespace, gp.Spec.SecretRef.Name)
		}
		if gp.Spec.Commit.Signing != nil {
			add(gp.Namespace, gp.Spec.Commit.Signing.SecretRef.Name)
		}
	}
	var targets v1alpha3.GitTargetList
	if err := r.Client.List(ctx, &targets); err != nil {
		return nil, fmt.Errorf("listing GitTargets: %w", err)
	}
	for _, t := range targets.Items {
		if e := t.Spec.Encryption; e != nil && e.Age.SecretRef != nil {
			add(t.Namespace, e.Age.SecretRef.Name)
		}
	}
	var clusters v1alpha3.ClusterProviderList
	if err := r.Client.List(ctx, &clusters); err != nil {
		return nil, fmt.Errorf("listing ClusterProviders: %w", err)
	}
	for _, cp := range clusters.Items {
		if cp.Spec.KubeConfig != nil {
			add(r.OperatorNamespace, cp.Spec.KubeConfig.SecretRef.Name)
		}
	}
	slices.SortFunc(names, func(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) })
	return slices.Compact(names), nil
}

// namespaceAdmitted applies ClusterProvider.spec.allowedNamespaces (deny by
// default) to a control-cluster namespace.
func (r *GitTargetReconciler) namespaceAdmitted(ctx context.Context, cp *v1alpha3.ClusterProvider, namespace string) bool {
	policy := cp.Spec.AllowedNamespaces
	if policy == nil {
		return false
	}
	info := rules.NamespaceInfo{Name: namespace}
	if policy.Selector != nil {
		var ns corev1.Namespace
		if err := r.Client.Get(ctx, ctrl.ObjectKey{Name: namespace}, &ns); err == nil {
			info.Labels = ns.Labels
		}
	}
	// NamespaceAllowed always admits its "own" namespace; pass one that can
	// never match so only the policy decides.
	return rules.NamespaceAllowed(policy, "", info)
}

// sourceConfig returns how to reach a ClusterProvider's source: the local
// cluster, or the kubeconfig in a Secret of the operator's namespace.
func sourceConfig(ctx context.Context, secrets ctrl.Reader, local *rest.Config, operatorNamespace string,
	cp *v1alpha3.ClusterProvider) (engine.SourceConfig, error) {
	qps := fmt.Sprintf("qps=%d,burst=%d,route=%s", cp.Spec.QPS, cp.Spec.Burst, cp.AuditRoute())
	if cp.Spec.KubeConfig == nil {
		cfg := rest.CopyConfig(local)
		applyRate(cfg, cp)
		return engine.SourceConfig{Config: cfg, Local: true, AuditRoute: cp.AuditRoute(), Fingerprint: "local," + qps}, nil
	}
	ref := cp.Spec.KubeConfig.SecretRef
	key := orDefault(ref.Key, "value")
	var secret corev1.Secret
	if err := secrets.Get(ctx, ctrl.ObjectKey{Namespace: operatorNamespace, Name: ref.Name}, &secret); err != nil {
		if apierrors.IsNotFound(err) {
			return engine.SourceConfig{}, fmt.Errorf("%w: the kubeconfig Secret %s/%s does not exist", errSecretMissing, operatorNamespace, ref.Name)
		}
		if apierrors.IsForbidden(err) {
			return engine.SourceConfig{}, fmt.Errorf("%w: the operator may not read the kubeconfig Secret %s/%s in its own namespace: "+
				"the chart grants it with its Role <fullname>-secrets there (rbac.create=true); without the chart, grant get, "+
				"list and watch on secrets there. The API server said: %w", errSecretForbidden, operatorNamespace, ref.Name, err)
		}
		return engine.SourceConfig{}, fmt.Errorf("reading the kubeconfig Secret %s/%s: %w", operatorNamespace, ref.Name, err)
	}
	data, ok := secret.Data[key]
	if !ok {
		return engine.SourceConfig{}, fmt.Errorf("%w: the kubeconfig Secret %s/%s has no key %q", errSecretMissing, operatorNamespace, ref.Name, key)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		return engine.SourceConfig{}, fmt.Errorf("parsing the kubeconfig in Secret %s/%s: %w", operatorNamespace, ref.Name, err)
	}
	applyRate(cfg, cp)
	return engine.SourceConfig{Config: cfg, AuditRoute: cp.AuditRoute(), Fingerprint: "secret=" + secret.ResourceVersion + "," + qps}, nil
}

func applyRate(cfg *rest.Config, cp *v1alpha3.ClusterProvider) {
	if cp.Spec.QPS > 0 {
		cfg.QPS = float32(cp.Spec.QPS)
	}
	if cp.Spec.Burst > 0 {
		cfg.Burst = int(cp.Spec.Burst)
	}
}

// providerReady waits (Reconciling) until the GitProvider is Ready, and
// reports its reason: a GitTarget cannot write through a provider that
// cannot reach its repository. A provider that cannot sign also stops the
// target's mirroring (stopWhenSigningUnavailable).
func (r *GitTargetReconciler) providerReady(ctx context.Context, run *targetRun) error {
	ready := meta.FindStatusCondition(run.provider.Status.Conditions, v1alpha3.ConditionReady)
	if ready != nil && ready.Status == metav1.ConditionTrue {
		return nil
	}
	msg := "GitProvider " + run.provider.Name + " is not Ready yet"
	if ready != nil && ready.Message != "" {
		msg += ": " + ready.Message
	}
	run.conds.wait(v1alpha3.ConditionGitPathAccepted, v1alpha3.ReasonGitProviderNotReady, msg)
	run.requeue = retryShort
	r.stopWhenSigningUnavailable(ctx, run)
	return errStop
}

// errSecretMissing marks a kubeconfig Secret (or key) that does not exist.
var errSecretMissing = errors.New("kubeconfig Secret missing")

// errSecretForbidden marks a kubeconfig Secret the operator may not read.
var errSecretForbidden = errors.New("kubeconfig Secret not readable")

func sourceConfigReason(err error) string {
	if errors.Is(err, errSecretMissing) {
		return v1alpha3.ReasonSecretNotFound
	}
	if errors.Is(err, errSecretForbidden) {
		return v1alpha3.ReasonSecretNamespaceNotGranted
	}
	return v1alpha3.ReasonInvalidSpec
}
