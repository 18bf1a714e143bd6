package e2e

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
)

// encryptionCondition waits for EncryptionConfigured to have status and
// reason with a message containing each of words.
func encryptionCondition(t *testing.T, m mirrorSetup, status metav1.ConditionStatus, reason string, words ...string) {
	t.Helper()
	eventually(t, "EncryptionConfigured="+string(status)+"/"+reason, func() bool {
		c := targetCondition(t, m.ns, m.target, v1alpha3.ConditionEncryptionConfigured)
		if c == nil || c.Status != status || c.Reason != reason || c.ObservedGeneration != getTarget(t, m).Generation {
			return false
		}
		for _, w := range words {
			if !strings.Contains(c.Message, w) {
				return false
			}
		}
		return true
	})
}

// TestATargetClaimingNothingSensitiveReportsEncryptionNotConfigured: no
// rule claims a sensitive type and spec.encryption is absent: the
// condition says encryption is not configured, and the target is Ready.
func TestATargetClaimingNothingSensitiveReportsEncryptionNotConfigured(t *testing.T) {
	m := newMirror(t, "encryption-unset", "configmaps")
	startOperator(t)
	encryptionCondition(t, m, metav1.ConditionFalse, v1alpha3.ReasonEncryptionNotConfigured, "not configured")
	waitReady(t, m.ns, m.target)
}

// TestAnInvalidAgeKeyWritesNoSecretAndTheConditionNamesTheEntry: the key
// Secret's *.agekey entry is no age key: EncryptionKeyInvalid names the
// Secret and the entry, no Secret is written while the ConfigMap is; once
// the entry holds a real key, the Secret is written encrypted.
func TestAnInvalidAgeKeyWritesNoSecretAndTheConditionNamesTheEntry(t *testing.T) {
	m := newMirror(t, "key-invalid", "secrets", "configmaps")
	apply(t, configMap(m.ns, "visible", map[string]string{"k": "v"}),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "db"},
			StringData: map[string]string{"password": "never-in-plaintext-either"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "sops-age"},
			Data: map[string][]byte{"age.agekey": []byte("AGE-SECRET-KEY-1NOTAKEY\n")}})
	encrypt(t, m, v1alpha3.AgeEncryption{SecretRef: &v1alpha3.LocalObjectReference{Name: "sops-age"}})
	startOperator(t)

	encryptionCondition(t, m, metav1.ConditionFalse, v1alpha3.ReasonEncryptionKeyInvalid,
		"key-invalid/sops-age", "entry age.agekey", "secrets")
	eventually(t, "the ConfigMap in Git", func() bool {
		return gitFile(t, m.repo, m.path+"/key-invalid/configmaps/visible.yaml") != ""
	})
	require.Empty(t, gitFile(t, m.repo, m.path+"/key-invalid/secrets/db.sops.yaml"), "no Secret without a usable key")

	key := newAgeKey(t)
	secret := corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "sops-age"}}
	edit(t, &secret, func() { secret.Data = map[string][]byte{"age.agekey": []byte(key.file)} })
	encryptionCondition(t, m, metav1.ConditionTrue, v1alpha3.ReasonSucceeded, key.recipient)
	eventually(t, "the encrypted Secret in Git", func() bool {
		return gitFile(t, m.repo, m.path+"/key-invalid/secrets/db.sops.yaml") != ""
	})
}
