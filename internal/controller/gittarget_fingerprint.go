package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/engine"
)

// A GitTarget is reconciled every resync and after every commit. What its
// branch worker and encryptor are built from rarely changes, so each is
// named by a fingerprint of the spec it came from and the resourceVersions
// of the Secrets (or ConfigMap) it read. The versions are read from the
// manager's metadata cache, which the provider controllers' watches keep
// of the credential namespaces anyway: when the fingerprint is the one the
// engine runs, the reconcile reads no Secret and opens no forge client.
// Anything the cache cannot answer (no cache, an object it has not seen
// yet) is read and built as before.

// cachedSettingsFingerprint is the fingerprint of gp's settings as the
// metadata cache knows them; false when it does not know one of them.
func (r *GitTargetReconciler) cachedSettingsFingerprint(ctx context.Context, gp *v1alpha3.GitProvider) (string, bool) {
	var credentials, knownHosts, signing string
	ok := true
	if ref := gp.Spec.SecretRef; ref != nil {
		credentials, ok = r.cachedVersion(ctx, "Secret", gp.Namespace, ref.Name)
	}
	if ref := gp.Spec.KnownHostsRef; ok && ref != nil {
		kind := ref.Kind
		if kind == "" {
			kind = "Secret"
		}
		knownHosts, ok = r.cachedVersion(ctx, kind, gp.Namespace, ref.Name)
	}
	if s := gp.Spec.Commit.Signing; ok && s != nil {
		signing, ok = r.cachedVersion(ctx, "Secret", gp.Namespace, s.SecretRef.Name)
	}
	return engine.SettingsFingerprint(gp.Generation, credentials, knownHosts, signing), ok
}

// cachedEncryptionVersion is t's engine.EncryptionFingerprint as the metadata cache
// knows its key Secret; false when it does not.
func (r *GitTargetReconciler) cachedEncryptionVersion(ctx context.Context, t *v1alpha3.GitTarget) (string, bool) {
	age := t.Spec.Encryption.Age
	version := ""
	if age.SecretRef != nil {
		var ok bool
		if version, ok = r.cachedVersion(ctx, "Secret", t.Namespace, age.SecretRef.Name); !ok {
			return "", false
		}
	}
	return engine.EncryptionFingerprint(age, version), true
}

// cachedVersion is the resourceVersion of the core object kind
// namespace/name in the metadata cache; false when there is no cache or
// the cache does not hold it.
func (r *GitTargetReconciler) cachedVersion(ctx context.Context, kind, namespace, name string) (string, bool) {
	if r.Metadata == nil || name == "" {
		return "", false
	}
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(kind))
	if err := r.Metadata.Get(ctx, ctrl.ObjectKey{Namespace: namespace, Name: name}, obj); err != nil {
		return "", false
	}
	return obj.ResourceVersion, true
}
