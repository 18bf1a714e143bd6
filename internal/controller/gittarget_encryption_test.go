package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/encryption"
	"github.com/configbutler/gitops-reverser/internal/engine"
	"github.com/configbutler/gitops-reverser/internal/kubescheme"
	"github.com/configbutler/gitops-reverser/internal/rules"
)

// The encryption step's key resolution and reasons, against a fake client
// (the end-to-end tests run it against a real API server).
func TestTheEncryptionStepResolvesKeysAndExplainsItself(t *testing.T) {
	identity, recipient, err := encryption.GenerateIdentity(time.Now())
	require.NoError(t, err)
	secrets := schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	ref := &v1alpha3.LocalObjectReference{Name: "age"}
	keySecret := func(data map[string]string) *corev1.Secret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "age"}, Data: map[string][]byte{}}
		for k, v := range data {
			s.Data[k] = []byte(v)
		}
		return s
	}
	tests := []struct {
		name       string
		spec       *v1alpha3.EncryptionSpec
		sensitive  bool
		secret     *corev1.Secret
		wantReason string
		wantIn     string
		encrypts   bool
	}{
		{name: "nothing sensitive, nothing configured", wantReason: v1alpha3.ReasonEncryptionNotConfigured},
		{name: "sensitive claimed without encryption", sensitive: true, wantReason: v1alpha3.ReasonEncryptionRequired, wantIn: "secrets in team"},
		{name: "recipients only", spec: ageSpec(v1alpha3.AgeEncryption{Recipients: []string{recipient}}),
			wantReason: v1alpha3.ReasonSucceeded, wantIn: "re-encrypted once", encrypts: true},
		{name: "identities from the Secret", spec: ageSpec(v1alpha3.AgeEncryption{SecretRef: ref}),
			secret: keySecret(map[string]string{"team.agekey": identity}), wantReason: v1alpha3.ReasonSucceeded, wantIn: recipient, encrypts: true},
		{name: "the Secret is missing", spec: ageSpec(v1alpha3.AgeEncryption{SecretRef: ref}), sensitive: true,
			wantReason: v1alpha3.ReasonEncryptionKeyMissing, wantIn: "team/age does not exist"},
		{name: "the Secret has no age key", spec: ageSpec(v1alpha3.AgeEncryption{SecretRef: ref}),
			secret: keySecret(map[string]string{"key.txt": identity}), wantReason: v1alpha3.ReasonEncryptionKeyMissing, wantIn: "holds no *.agekey"},
		{name: "the Secret's age key is not one", spec: ageSpec(v1alpha3.AgeEncryption{SecretRef: ref}),
			secret: keySecret(map[string]string{"a.agekey": "AGE-SECRET-KEY-1NOPE"}), wantReason: v1alpha3.ReasonEncryptionKeyInvalid, wantIn: "entry a.agekey: line 1"},
		{name: "generated into a missing Secret", spec: ageSpec(v1alpha3.AgeEncryption{SecretRef: ref, GenerateWhenMissing: true}),
			wantReason: v1alpha3.ReasonSucceeded, wantIn: "generated into Secret age", encrypts: true},
		{name: "generated into a Secret without a key", spec: ageSpec(v1alpha3.AgeEncryption{SecretRef: ref, GenerateWhenMissing: true}),
			secret: keySecret(map[string]string{"other": "x"}), wantReason: v1alpha3.ReasonSucceeded, encrypts: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			scheme, err := kubescheme.New()
			require.NoError(t, err)
			builder := fake.NewClientBuilder().WithScheme(scheme)
			if tt.secret != nil {
				builder = builder.WithObjects(tt.secret)
			}
			c := builder.Build()
			r := &GitTargetReconciler{Client: c, SecretReader: c, Engine: engine.New(engine.Options{Builders: engine.Builders{Secrets: c}})}
			target := &v1alpha3.GitTarget{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "mirror"},
				Spec: v1alpha3.GitTargetSpec{Encryption: tt.spec}}
			run := &targetRun{target: target, conds: newTargetConditions(&target.Status.Conditions, 1)}
			if tt.sensitive {
				run.spec.Claims = []rules.Claim{{GVR: secrets, Namespace: "team", Kind: "Secret", Sensitive: true}}
			}

			require.NoError(t, r.encryption(context.Background(), run))

			cond := meta.FindStatusCondition(target.Status.Conditions, v1alpha3.ConditionEncryptionConfigured)
			require.NotNil(t, cond)
			require.Equal(t, tt.wantReason, cond.Reason, cond.Message)
			require.Contains(t, cond.Message, tt.wantIn)
			require.NotContains(t, cond.Message, "NOPE", "no identity material in status")
			require.NotContains(t, cond.Message, identity[strings.Index(identity, "AGE-SECRET-KEY-1"):], "no identity material in status")
			require.Equal(t, tt.encrypts, run.spec.Encryption.Encryptor != nil)
			if tt.spec != nil && tt.spec.Age.GenerateWhenMissing {
				var stored corev1.Secret
				require.NoError(t, c.Get(context.Background(), ctrl.ObjectKey{Namespace: "team", Name: "age"}, &stored))
				require.True(t, strings.HasPrefix(string(stored.Data["age.agekey"]), "# created: "))
				require.Equal(t, run.spec.Encryption.Encryptor.Recipients(), recipientsOf(t, string(stored.Data["age.agekey"])))
			}
		})
	}
}

func ageSpec(age v1alpha3.AgeEncryption) *v1alpha3.EncryptionSpec {
	return &v1alpha3.EncryptionSpec{Provider: "sops", Age: age}
}

func recipientsOf(t *testing.T, identityFile string) []string {
	t.Helper()
	_, recipients, err := encryption.ParseIdentities(identityFile)
	require.NoError(t, err)
	return recipients
}
