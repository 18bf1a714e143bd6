package controller

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/encryption"
	"github.com/configbutler/gitops-reverser/internal/rules"
)

const (
	// ageKeySuffix marks the Secret entries that hold age identities (the
	// Flux convention).
	ageKeySuffix = ".agekey"
	// generatedAgeKey is the entry a generated identity is stored under.
	generatedAgeKey = "age.agekey"
	// generatedAnnotation marks a key the operator generated.
	generatedAnnotation = "configbutler.ai/generated-for"
)

// keyProblem is a key configuration a user must fix; its reason goes on
// EncryptionConfigured.
type keyProblem struct {
	reason, message string
}

func (p *keyProblem) Error() string { return p.message }

// encryption sets EncryptionConfigured and hands the engine the target's
// encryptor:
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
	run.spec.Encryption = nil
	sensitive := sensitiveClaims(run.spec.Claims)
	if run.target.Spec.Encryption == nil {
		if len(sensitive) > 0 {
			run.conds.setBool(v1alpha3.ConditionEncryptionConfigured, false, v1alpha3.ReasonEncryptionRequired,
				fmt.Sprintf("rules claim sensitive resources (%s), which are only written encrypted; set spec.encryption to write them", strings.Join(sensitive, ", ")))
		} else {
			run.conds.setBool(v1alpha3.ConditionEncryptionConfigured, false, v1alpha3.ReasonEncryptionNotConfigured,
				"no sensitive resources are claimed; encryption is not configured")
		}
		return nil
	}
	if enc, running := r.runningEncryption(run.target); enc != nil {
		if version, known := r.cachedEncryptionVersion(ctx, run.target); known && version == running {
			run.spec.Encryption, run.spec.EncryptionVersion = enc, version
			run.conds.setBool(v1alpha3.ConditionEncryptionConfigured, true, v1alpha3.ReasonSucceeded,
				encryptionSummary(enc, keySource(run.target.Spec.Encryption.Age, false)))
			return nil
		}
	}
	enc, source, version, err := r.encryptor(ctx, run.target)
	var problem *keyProblem
	if errors.As(err, &problem) {
		msg := problem.message
		if len(sensitive) > 0 {
			msg += fmt.Sprintf("; sensitive resources (%s) are not written until this is fixed", strings.Join(sensitive, ", "))
		}
		run.conds.setBool(v1alpha3.ConditionEncryptionConfigured, false, problem.reason, msg)
		return nil
	}
	if err != nil {
		return err
	}
	run.spec.Encryption, run.spec.EncryptionVersion = enc, version
	run.conds.setBool(v1alpha3.ConditionEncryptionConfigured, true, v1alpha3.ReasonSucceeded, encryptionSummary(enc, source))
	return nil
}

// runningEncryption is the engine's running encryptor of t and what it
// was built from; nil without a cache to compare with (or no engine).
func (r *GitTargetReconciler) runningEncryption(t *v1alpha3.GitTarget) (*encryption.Encryptor, string) {
	if r.Metadata == nil || r.Engine == nil {
		return nil, ""
	}
	return r.Engine.RunningEncryption(keyOf(t))
}

// encryptor builds the target's encryptor from spec.encryption.age: the
// listed recipients plus the identities in the Secret, generating one into
// it when asked. source describes where identities came from, version
// what the encryptor was built from (encryptionVersion).
func (r *GitTargetReconciler) encryptor(ctx context.Context, t *v1alpha3.GitTarget) (enc *encryption.Encryptor, source, version string, err error) {
	age := t.Spec.Encryption.Age
	keys := encryption.Keys{Recipients: age.Recipients}
	secretVersion := ""
	generated := false
	if age.SecretRef != nil {
		if keys.Identities, generated, secretVersion, err = r.ageIdentities(ctx, t, age.SecretRef.Name, age.GenerateWhenMissing); err != nil {
			return nil, "", "", err
		}
	}
	if enc, err = encryption.New(keys); err != nil {
		return nil, "", "", &keyProblem{v1alpha3.ReasonEncryptionKeyInvalid, fmt.Sprintf("spec.encryption.age: %v", err)}
	}
	return enc, keySource(age, generated), encryptionVersion(age, secretVersion), nil
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

// ageIdentities reads the *.agekey entries of the key Secret, uncached,
// and the version of the Secret they came from. With generate, a missing
// Secret is created, and one without identities gets one, so the operator
// can read its files back after a restart.
func (r *GitTargetReconciler) ageIdentities(ctx context.Context, t *v1alpha3.GitTarget, name string, generate bool) (ids []string, generated bool, version string, err error) {
	var secret corev1.Secret
	err = r.SecretReader.Get(ctx, ctrl.ObjectKey{Namespace: t.Namespace, Name: name}, &secret)
	found := err == nil
	switch {
	case apierrors.IsNotFound(err) && !generate:
		return nil, false, "", &keyProblem{v1alpha3.ReasonEncryptionKeyMissing, fmt.Sprintf(
			"age key Secret %s/%s does not exist: create it with an %s entry holding an age identity, or set spec.encryption.age.generateWhenMissing", t.Namespace, name, "*"+ageKeySuffix)}
	case err != nil && !apierrors.IsNotFound(err):
		return nil, false, "", fmt.Errorf("reading age key Secret %s/%s: %w", t.Namespace, name, err)
	}
	ids, err = ageKeyEntries(&secret)
	if err != nil || len(ids) > 0 {
		return ids, false, secret.ResourceVersion, err
	}
	if !generate {
		return nil, false, "", &keyProblem{v1alpha3.ReasonEncryptionKeyMissing, fmt.Sprintf(
			"age key Secret %s/%s holds no %s entry: add one holding an age identity, or set spec.encryption.age.generateWhenMissing", t.Namespace, name, "*"+ageKeySuffix)}
	}
	id, version, err := r.generateAgeKey(ctx, t, &secret, name, found)
	if err != nil {
		return nil, false, "", err
	}
	return []string{id}, true, version, nil
}

// ageKeyEntries returns the Secret's *.agekey values, in key order; an
// entry that is not an age identity file is named in the error.
func ageKeyEntries(s *corev1.Secret) ([]string, error) {
	var names []string
	for k := range s.Data {
		if strings.HasSuffix(k, ageKeySuffix) {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	out := make([]string, 0, len(names))
	for _, k := range names {
		if _, _, err := encryption.ParseIdentities(string(s.Data[k])); err != nil {
			return nil, &keyProblem{v1alpha3.ReasonEncryptionKeyInvalid, fmt.Sprintf("age key Secret %s/%s, entry %s: %v", s.Namespace, s.Name, k, err)}
		}
		out = append(out, string(s.Data[k]))
	}
	return out, nil
}

// generateAgeKey stores a new age identity in the Secret, creating it when
// it does not exist, and returns it with the version of the Secret that
// holds it. A concurrent writer makes the create or update fail
// (resourceVersion), and the next reconcile reads what won.
func (r *GitTargetReconciler) generateAgeKey(ctx context.Context, t *v1alpha3.GitTarget, secret *corev1.Secret, name string, exists bool) (id, version string, err error) {
	if id, _, err = encryption.GenerateIdentity(time.Now()); err != nil {
		return "", "", err
	}
	if !exists {
		secret = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: t.Namespace, Name: name}}
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
		return "", "", &keyProblem{v1alpha3.ReasonEncryptionKeyMissing, fmt.Sprintf(
			"generating an age key into Secret %s/%s was refused (%v): grant the operator create and update on secrets (with the chart: rbac.generateEncryptionKeys=true), or create the Secret yourself", t.Namespace, name, err)}
	}
	if err != nil {
		return "", "", fmt.Errorf("storing a generated age key in Secret %s/%s: %w", t.Namespace, name, err)
	}
	return id, secret.ResourceVersion, nil
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
