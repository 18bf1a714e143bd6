package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/encryption"
	"github.com/configbutler/gitops-reverser/internal/engine"
	"github.com/configbutler/gitops-reverser/internal/rules"
)

const (
	// generatedAgeKey is the entry a generated identity is stored under.
	generatedAgeKey = "age.agekey"
	// generatedAnnotation marks a key the operator generated.
	generatedAnnotation = "configbutler.ai/generated-for"
)

// encryption sets EncryptionConfigured and hands the engine the declarative
// spec of the target's encryptor; the engine builds it (PrepareEncryption),
// only when its fingerprint is not the running one's:
//   - True/Succeeded: spec.encryption gives usable age keys; sensitive
//     objects are written encrypted.
//   - False/EncryptionRequired: rules claim sensitive types and
//     spec.encryption is absent.
//   - False/EncryptionNotConfigured: neither.
//   - False/EncryptionKeyMissing: the key Secret is missing or holds no
//     *.agekey entry, and generateWhenMissing is off (or could not write).
//   - False/EncryptionKeyInvalid: a recipient or an *.agekey entry is not an
//     age key.
//
// While it is False, sensitive objects are not written (and not swept);
// everything else mirrors. Key Secrets are read uncached and not watched: a
// fix is picked up by the next resync.
func (r *GitTargetReconciler) encryption(ctx context.Context, run *targetRun) error {
	run.spec.Encryption = engine.EncryptionSettings{}
	sensitive := sensitiveClaims(run.spec.Claims)
	t := run.target
	if t.Spec.Encryption == nil {
		if len(sensitive) > 0 {
			run.conds.setBool(v1alpha3.ConditionEncryptionConfigured, false, v1alpha3.ReasonEncryptionRequired,
				fmt.Sprintf("rules claim sensitive resources (%s), which are only written encrypted; set spec.encryption to write them", strings.Join(sensitive, ", ")))
		} else {
			run.conds.setBool(v1alpha3.ConditionEncryptionConfigured, false, v1alpha3.ReasonEncryptionNotConfigured,
				"no sensitive resources are claimed; encryption is not configured")
		}
		return nil
	}
	age := t.Spec.Encryption.Age
	spec := engine.EncryptionSpec{Key: keyOf(t), Namespace: t.Namespace, Age: age}
	// Only a running encryptor is worth asking the cache about: at start
	// none runs, and the cache may still be filling.
	if _, ok := r.Engine.RunningEncryption(spec.Key); ok {
		if fingerprint, known := r.cachedEncryptionVersion(ctx, t); known {
			spec.Fingerprint = fingerprint
		}
	}
	settings, err := r.Engine.PrepareEncryption(ctx, spec)
	generated := false
	var missing *engine.KeyError
	if errors.As(err, &missing) && missing.Missing && age.GenerateWhenMissing {
		if generated, err = r.generateAgeKey(ctx, t, age.SecretRef.Name); err == nil {
			settings, err = r.Engine.PrepareEncryption(ctx, engine.EncryptionSpec{Key: spec.Key, Namespace: t.Namespace, Age: age})
		}
	}
	var problem *engine.KeyError
	if errors.As(err, &problem) {
		msg := problem.Message
		if len(sensitive) > 0 {
			msg += fmt.Sprintf("; sensitive resources (%s) are not written until this is fixed", strings.Join(sensitive, ", "))
		}
		run.conds.setBool(v1alpha3.ConditionEncryptionConfigured, false, problem.Reason, msg)
		return nil
	}
	if err != nil {
		return err
	}
	run.spec.Encryption = settings
	run.conds.setBool(v1alpha3.ConditionEncryptionConfigured, true, v1alpha3.ReasonSucceeded,
		encryptionSummary(settings.Encryptor, keySource(age, generated)))
	return nil
}

// keySource says where the identities of age come from, for the condition.
func keySource(age v1alpha3.AgeEncryption, generated bool) string {
	switch {
	case age.SecretRef == nil:
		return ""
	case generated:
		return fmt.Sprintf("generated into Secret %s", age.SecretRef.Name)
	}
	return fmt.Sprintf("Secret %s", age.SecretRef.Name)
}

// generateAgeKey stores a new age identity in the key Secret, creating it
// when it does not exist: the GitTarget asked for one
// (generateWhenMissing) and the engine found none. Writing it is this
// controller's job; the engine then builds the encryptor from the Secret
// as stored. A concurrent writer makes the create or update fail
// (resourceVersion), and the next reconcile reads what won; one that wrote
// an identity since the engine looked is kept (generated is false).
func (r *GitTargetReconciler) generateAgeKey(ctx context.Context, t *v1alpha3.GitTarget, name string) (generated bool, err error) {
	// The existing entries are kept: read the Secret to update it.
	secret := &corev1.Secret{}
	err = r.SecretReader.Get(ctx, ctrl.ObjectKey{Namespace: t.Namespace, Name: name}, secret)
	exists := err == nil
	switch {
	case apierrors.IsNotFound(err):
		secret = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: t.Namespace, Name: name}}
	case err != nil:
		return false, fmt.Errorf("reading age key Secret %s/%s: %w", t.Namespace, name, err)
	}
	for k := range secret.Data {
		if strings.HasSuffix(k, engine.AgeKeySuffix) {
			return false, nil
		}
	}
	id, _, err := encryption.GenerateIdentity(time.Now())
	if err != nil {
		return false, err
	}
	if secret.Data == nil {
		secret.Data = map[string][]byte{}
	}
	if secret.Annotations == nil {
		secret.Annotations = map[string]string{}
	}
	secret.Data[generatedAgeKey] = []byte(id)
	secret.Annotations[generatedAnnotation] = "GitTarget " + t.Name
	if exists {
		err = r.Client.Update(ctx, secret)
	} else {
		err = r.Client.Create(ctx, secret)
	}
	if apierrors.IsForbidden(err) {
		return false, &engine.KeyError{Reason: v1alpha3.ReasonEncryptionKeyMissing, Message: fmt.Sprintf(
			"generating an age key into Secret %s/%s was refused (%v): grant the operator create and update on secrets (with the chart: rbac.generateEncryptionKeys=true), or create the Secret yourself", t.Namespace, name, err)}
	}
	if err != nil {
		return false, fmt.Errorf("storing a generated age key in Secret %s/%s: %w", t.Namespace, name, err)
	}
	return true, nil
}

// sensitiveClaims names the claimed sensitive types, for messages.
func sensitiveClaims(claims []rules.Claim) []string {
	var out []string
	for _, c := range claims {
		if c.Sensitive {
			out = append(out, c.GVR.Resource+" in "+orDefault(c.Namespace, "the cluster"))
		}
	}
	return out
}

// encryptionSummary says whom files are encrypted to and whether ciphertext
// survives a restart (only when the operator holds an identity).
func encryptionSummary(enc *encryption.Encryptor, source string) string {
	recipients := enc.Recipients()
	shown := recipients
	if len(shown) > 3 {
		shown = shown[:3]
	}
	msg := fmt.Sprintf("sensitive resources are SOPS-encrypted to %d age recipient(s): %s", len(recipients), strings.Join(shown, ", "))
	if len(recipients) > len(shown) {
		msg += ", ..."
	}
	if enc.CanDecrypt() {
		return msg + fmt.Sprintf("; identities from %s let unchanged objects keep their ciphertext", source)
	}
	return msg + "; without an identity (spec.encryption.age.secretRef), every sensitive file is re-encrypted once after each operator restart"
}
