package engine

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/branch"
	"github.com/configbutler/gitops-reverser/internal/encryption"
	"github.com/configbutler/gitops-reverser/internal/kubescheme"
)

// countingReader counts the Secrets read through it.
type countingReader struct {
	client.Reader
	reads int
}

func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.reads++
	return c.Reader.Get(ctx, key, obj, opts...)
}

// TestTheEngineBuildsAnEncryptorOnlyWhenItsFingerprintChanges: a spec
// whose fingerprint is the running encryptor's reads no Secret and gets
// the running encryptor back; any other reads the key Secret and builds.
func TestTheEngineBuildsAnEncryptorOnlyWhenItsFingerprintChanges(t *testing.T) {
	identity, recipient, err := encryption.GenerateIdentity(time.Now())
	require.NoError(t, err)
	scheme, err := kubescheme.New()
	require.NoError(t, err)
	key := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "age"},
		Data: map[string][]byte{"team.agekey": []byte(identity)}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(key).Build()
	require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(key), key))
	secrets := &countingReader{Reader: c}
	e := New(Options{Builders: Builders{Secrets: secrets}})
	target := branch.TargetKey{Namespace: "team", Name: "mirror"}
	spec := EncryptionSpec{Key: target, Namespace: "team", Age: v1alpha3.AgeEncryption{SecretRef: &v1alpha3.LocalObjectReference{Name: "age"}}}

	built, err := e.PrepareEncryption(context.Background(), spec)
	require.NoError(t, err)
	require.Equal(t, 1, secrets.reads)
	require.Equal(t, []string{recipient}, built.Encryptor.Recipients())
	require.True(t, built.Encryptor.CanDecrypt())
	require.Equal(t, EncryptionFingerprint(spec.Age, key.ResourceVersion), built.Fingerprint)
	_, running := e.RunningEncryption(target)
	require.False(t, running, "nothing runs before ApplyTarget")
	e.targets[target] = &targetEntry{spec: TargetSpec{Key: target, Encryption: built}}

	spec.Fingerprint = built.Fingerprint
	again, err := e.PrepareEncryption(context.Background(), spec)
	require.NoError(t, err)
	require.Equal(t, 1, secrets.reads, "the running encryptor was built from this fingerprint")
	require.Same(t, built.Encryptor, again.Encryptor)

	spec.Fingerprint = EncryptionFingerprint(spec.Age, key.ResourceVersion+"0")
	rotated, err := e.PrepareEncryption(context.Background(), spec)
	require.NoError(t, err)
	require.Equal(t, 2, secrets.reads, "a new key Secret version is read")
	require.NotSame(t, built.Encryptor, rotated.Encryptor)
}

// TestAKeyTheEngineCannotUseSaysWhy: the key Secret's problems come back
// as KeyErrors with the condition's reason; Missing marks the ones a
// generated key would fix.
func TestAKeyTheEngineCannotUseSaysWhy(t *testing.T) {
	scheme, err := kubescheme.New()
	require.NoError(t, err)
	ref := &v1alpha3.LocalObjectReference{Name: "age"}
	tests := []struct {
		name        string
		age         v1alpha3.AgeEncryption
		data        map[string][]byte
		wantReason  string
		wantMissing bool
		wantIn      string
	}{
		{name: "no Secret", age: v1alpha3.AgeEncryption{SecretRef: ref},
			wantReason: v1alpha3.ReasonEncryptionKeyMissing, wantMissing: true, wantIn: "team/age does not exist"},
		{name: "no age key in it", age: v1alpha3.AgeEncryption{SecretRef: ref}, data: map[string][]byte{"key.txt": []byte("x")},
			wantReason: v1alpha3.ReasonEncryptionKeyMissing, wantMissing: true, wantIn: "holds no *.agekey"},
		{name: "an age key that is not one", age: v1alpha3.AgeEncryption{SecretRef: ref}, data: map[string][]byte{"a.agekey": []byte("AGE-SECRET-KEY-1NOPE")},
			wantReason: v1alpha3.ReasonEncryptionKeyInvalid, wantIn: "entry a.agekey"},
		{name: "a recipient that is not one", age: v1alpha3.AgeEncryption{Recipients: []string{"age1nope"}},
			wantReason: v1alpha3.ReasonEncryptionKeyInvalid, wantIn: "spec.encryption.age"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			builder := fake.NewClientBuilder().WithScheme(scheme)
			if tt.data != nil {
				builder = builder.WithObjects(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "age"}, Data: tt.data})
			}
			e := New(Options{Builders: Builders{Secrets: builder.Build()}})

			_, err := e.PrepareEncryption(context.Background(), EncryptionSpec{Namespace: "team", Age: tt.age})

			var keyErr *KeyError
			require.ErrorAs(t, err, &keyErr)
			require.Equal(t, tt.wantReason, keyErr.Reason)
			require.Equal(t, tt.wantMissing, keyErr.Missing)
			require.Contains(t, keyErr.Message, tt.wantIn)
			require.NotContains(t, keyErr.Message, "NOPE", "no identity material")
		})
	}
}
