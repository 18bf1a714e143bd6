package engine

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/branch"
	"github.com/configbutler/gitops-reverser/internal/encryption"
)

// AgeKeySuffix marks the Secret entries that hold age identities (the Flux
// convention).
const AgeKeySuffix = ".agekey"

// EncryptionSpec is what the GitTarget controller declares a target's
// encryptor is built from: spec.encryption.age of the target in Namespace
// (recipients, key Secret, generateWhenMissing). Fingerprint, when set, is
// EncryptionFingerprint of it with the key Secret's resourceVersion from
// the metadata cache; the engine then builds nothing when the running
// encryptor has it.
type EncryptionSpec struct {
	Key         branch.TargetKey
	Namespace   string
	Age         v1alpha3.AgeEncryption
	Fingerprint string
}

// EncryptionSettings is a built encryptor and the fingerprint of what it
// was built from; the zero value encrypts nothing.
type EncryptionSettings struct {
	Encryptor   *encryption.Encryptor
	Fingerprint string
}

// EncryptionFingerprint names the keys an encryptor is built from: the
// recipients and key Secret age lists, and the resourceVersion of that
// Secret ("" without one).
func EncryptionFingerprint(age v1alpha3.AgeEncryption, secretVersion string) string {
	secret := ""
	if age.SecretRef != nil {
		secret = age.SecretRef.Name
	}
	return fmt.Sprintf("recipients=%s,secret=%s@%s,generate=%t", strings.Join(age.Recipients, " "), secret, secretVersion,
		age.GenerateWhenMissing)
}

// KeyError is a key configuration a user must fix; Reason goes on
// EncryptionConfigured. Missing says the key Secret does not exist or
// holds no *.agekey entry: generating one is the GitTarget controller's
// write, when the target asks for it.
type KeyError struct {
	Reason, Message string
	Missing         bool
}

func (e *KeyError) Error() string { return e.Message }

// RunningEncryption is the fingerprint of the encryptor the running target
// of key writes with; false when the target does not run or writes no
// sensitive object.
func (e *Engine) RunningEncryption(key branch.TargetKey) (string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	entry := e.targets[key]
	if entry == nil || entry.spec.Encryption.Encryptor == nil {
		return "", false
	}
	return entry.spec.Encryption.Fingerprint, true
}

// PrepareEncryption returns the encryptor ApplyTarget runs spec's target
// with. When the running one was built from spec.Fingerprint it is
// returned as it is, reading no Secret (its cache of encrypted output
// lives on); else the key Secret is read and a new one built.
func (e *Engine) PrepareEncryption(ctx context.Context, spec EncryptionSpec) (EncryptionSettings, error) {
	if spec.Fingerprint != "" {
		e.mu.Lock()
		entry := e.targets[spec.Key]
		e.mu.Unlock()
		if entry != nil && entry.spec.Encryption.Encryptor != nil && entry.spec.Encryption.Fingerprint == spec.Fingerprint {
			return entry.spec.Encryption, nil
		}
	}
	return e.opts.Builders.encryptor(ctx, spec.Namespace, spec.Age)
}

// encryptor builds an encryptor from age: the listed recipients plus the
// identities in the key Secret.
func (b Builders) encryptor(ctx context.Context, namespace string, age v1alpha3.AgeEncryption) (EncryptionSettings, error) {
	keys := encryption.Keys{Recipients: age.Recipients}
	secretVersion := ""
	if age.SecretRef != nil {
		var err error
		if keys.Identities, secretVersion, err = b.ageIdentities(ctx, namespace, age.SecretRef.Name); err != nil {
			return EncryptionSettings{}, err
		}
	}
	enc, err := encryption.New(keys)
	if err != nil {
		return EncryptionSettings{}, &KeyError{Reason: v1alpha3.ReasonEncryptionKeyInvalid, Message: fmt.Sprintf("spec.encryption.age: %v", err)}
	}
	return EncryptionSettings{Encryptor: enc, Fingerprint: EncryptionFingerprint(age, secretVersion)}, nil
}

// ageIdentities reads the *.agekey entries of the key Secret, uncached,
// and the version of the Secret they came from.
func (b Builders) ageIdentities(ctx context.Context, namespace, name string) (ids []string, version string, err error) {
	var secret corev1.Secret
	err = b.Secrets.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &secret)
	if apierrors.IsNotFound(err) {
		return nil, "", &KeyError{Reason: v1alpha3.ReasonEncryptionKeyMissing, Missing: true, Message: fmt.Sprintf(
			"age key Secret %s/%s does not exist: create it with an %s entry holding an age identity, or set spec.encryption.age.generateWhenMissing", namespace, name, "*"+AgeKeySuffix)}
	}
	if err != nil {
		return nil, "", fmt.Errorf("reading age key Secret %s/%s: %w", namespace, name, err)
	}
	if ids, err = ageKeyEntries(&secret); err != nil {
		return nil, "", err
	}
	if len(ids) == 0 {
		return nil, "", &KeyError{Reason: v1alpha3.ReasonEncryptionKeyMissing, Missing: true, Message: fmt.Sprintf(
			"age key Secret %s/%s holds no %s entry: add one holding an age identity, or set spec.encryption.age.generateWhenMissing", namespace, name, "*"+AgeKeySuffix)}
	}
	return ids, secret.ResourceVersion, nil
}

// ageKeyEntries returns the Secret's *.agekey values, in key order; an
// entry that is not an age identity file is named in the error.
func ageKeyEntries(s *corev1.Secret) ([]string, error) {
	var names []string
	for k := range s.Data {
		if strings.HasSuffix(k, AgeKeySuffix) {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	out := make([]string, 0, len(names))
	for _, k := range names {
		if _, _, err := encryption.ParseIdentities(string(s.Data[k])); err != nil {
			return nil, &KeyError{Reason: v1alpha3.ReasonEncryptionKeyInvalid, Message: fmt.Sprintf("age key Secret %s/%s, entry %s: %v", s.Namespace, s.Name, k, err)}
		}
		out = append(out, string(s.Data[k]))
	}
	return out, nil
}
