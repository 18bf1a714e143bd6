package signing_test

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/forges/sshsign"
	"github.com/configbutler/gitops-reverser/internal/signing"
	"github.com/configbutler/gitops-reverser/test/harness"
)

var kube *harness.Kube

func TestMain(m *testing.M) {
	os.Exit(harness.RunWithKube(m, harness.KubeOptions{SkipCRDs: true}, &kube))
}

// namespace creates a namespace for one test.
func namespace(t *testing.T, name string) string {
	t.Helper()
	require.NoError(t, kube.Client().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}))
	return name
}

func spec(secret, key string, generate bool) v1alpha3.CommitSigning {
	return v1alpha3.CommitSigning{SecretRef: v1alpha3.SecretKeyReference{Name: secret, Key: key}, GenerateWhenMissing: generate}
}

func readSecret(t *testing.T, ns, name string) *corev1.Secret {
	t.Helper()
	secret := &corev1.Secret{}
	require.NoError(t, kube.Client().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, secret))
	return secret
}

func TestEnsureCreatesTheSecretWithAGeneratedKeyAndThenKeepsIt(t *testing.T) {
	ctx, c := context.Background(), kube.Client()
	ns := namespace(t, "generate-create")

	key, err := signing.Ensure(ctx, c, c, ns, spec("signing", "", true), "gitops-reverser "+ns+"/repo")
	require.NoError(t, err)
	require.True(t, key.Generated)
	secret := readSecret(t, ns, "signing")
	require.Equal(t, corev1.SecretTypeOpaque, secret.Type)
	require.Equal(t, key.ResourceVersion, secret.ResourceVersion)
	stored, err := sshsign.Parse(secret.Data[signing.DefaultKey])
	require.NoError(t, err)
	require.Equal(t, key.Signer.PublicKey(), stored.PublicKey(), "the key in the Secret is the one returned")

	again, err := signing.Ensure(ctx, c, c, ns, spec("signing", "", true), "ignored")
	require.NoError(t, err)
	require.False(t, again.Generated, "a key that exists is used, not replaced")
	require.Equal(t, key.Signer.PublicKey(), again.Signer.PublicKey())
	require.Equal(t, secret.ResourceVersion, readSecret(t, ns, "signing").ResourceVersion, "nothing was written")
}

func TestEnsureAddsTheKeyToAnExistingSecretAndKeepsItsOtherKeys(t *testing.T) {
	ctx, c := context.Background(), kube.Client()
	ns := namespace(t, "generate-add")
	require.NoError(t, c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "git"},
		Data:       map[string][]byte{"token": []byte("t0ken"), "commit.key": []byte("  \n")},
	}))

	key, err := signing.Ensure(ctx, c, c, ns, spec("git", "commit.key", true), "c")
	require.NoError(t, err)
	require.True(t, key.Generated, "an empty value holds no key")
	secret := readSecret(t, ns, "git")
	require.Equal(t, "t0ken", string(secret.Data["token"]))
	loaded, err := signing.Load(ctx, c, ns, spec("git", "commit.key", false))
	require.NoError(t, err)
	require.Equal(t, key.Signer.PublicKey(), loaded.Signer.PublicKey())
}

func TestEnsureWithoutGenerateReportsWhatIsMissingOrInvalid(t *testing.T) {
	ctx, c := context.Background(), kube.Client()
	ns := namespace(t, "no-generate")
	require.NoError(t, c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "keys"},
		Data:       map[string][]byte{"other": []byte("x"), "bad.key": []byte("not a key")},
	}))

	_, err := signing.Ensure(ctx, c, c, ns, spec("absent", "", false), "c")
	require.ErrorIs(t, err, signing.ErrKeyMissing)
	require.ErrorContains(t, err, "Secret absent (spec.commit.signing.secretRef) not found")

	_, err = signing.Ensure(ctx, c, c, ns, spec("keys", "", false), "c")
	require.ErrorIs(t, err, signing.ErrKeyMissing)
	require.ErrorContains(t, err, `Secret no-generate/keys key "signing.key" does not exist`)

	_, err = signing.Ensure(ctx, c, c, ns, spec("keys", "bad.key", true), "c")
	require.ErrorIs(t, err, signing.ErrKeyInvalid, "an unusable key is reported, never replaced")
	require.ErrorIs(t, err, sshsign.ErrInvalidKey)
	require.Equal(t, "not a key", string(readSecret(t, ns, "keys").Data["bad.key"]))
}

// staleReader answers the first Get of a Secret with the version it was
// given, as if another writer changed the Secret right after the read.
type staleReader struct {
	client.Reader
	stale *corev1.Secret
}

func (r *staleReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if r.stale != nil {
		r.stale.DeepCopyInto(obj.(*corev1.Secret))
		r.stale = nil
		return nil
	}
	return r.Reader.Get(ctx, key, obj, opts...)
}

func TestEnsureNeverOverwritesAKeyWrittenBetweenItsReadAndItsWrite(t *testing.T) {
	ctx, c := context.Background(), kube.Client()
	ns := namespace(t, "generate-race")
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "signing"}, Data: map[string][]byte{"other": []byte("x")}}
	require.NoError(t, c.Create(ctx, secret))
	stale := secret.DeepCopy()
	theirs, err := sshsign.Generate("theirs")
	require.NoError(t, err)
	secret.Data = map[string][]byte{signing.DefaultKey: theirs}
	require.NoError(t, c.Update(ctx, secret))

	key, err := signing.Ensure(ctx, &staleReader{Reader: c, stale: stale}, c, ns, spec("signing", "", true), "ours")
	require.NoError(t, err)
	require.False(t, key.Generated, "the conflict made it read again and find their key")
	require.Equal(t, string(theirs), string(readSecret(t, ns, "signing").Data[signing.DefaultKey]))
}
