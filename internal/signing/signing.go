// Package signing keeps a GitProvider's commit signing key in the Secret
// spec.commit.signing.secretRef names: it reads the key, and generates one
// into the Secret when generateWhenMissing asks for it. The signer itself
// (forges/sshsign) knows nothing of Kubernetes.
//
// Secret values are read from the API server on demand (a manager's
// APIReader), never from the informer cache, like credentials.
package signing

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/forges/sshsign"
)

// DefaultKey is the Secret key holding the private key when secretRef.key
// is not set.
const DefaultKey = "signing.key"

// ErrKeyMissing matches an error saying the Secret, or the key in it, does
// not exist and none was generated. The error names the Secret and key.
var ErrKeyMissing = errors.New("signing key missing")

// ErrKeyInvalid matches an error saying the key exists but cannot sign (not
// a private key, or protected by a passphrase). It wraps
// sshsign.ErrInvalidKey and never includes key material.
var ErrKeyInvalid = errors.New("signing key invalid")

// Key is a usable signing key and where it came from.
type Key struct {
	Signer *sshsign.Signer
	// ResourceVersion is the Secret's, so a caller can tell the key was
	// replaced (rotated) since it last looked.
	ResourceVersion string
	// Generated is true when this call generated the key.
	Generated bool
}

// Ref is the Secret and key spec names, with the key's default applied.
func Ref(spec v1alpha3.CommitSigning) (name, key string) {
	key = spec.SecretRef.Key
	if key == "" {
		key = DefaultKey
	}
	return spec.SecretRef.Name, key
}

// Load reads the signing key of spec from namespace. It never writes: a
// missing key is ErrKeyMissing whatever generateWhenMissing says.
func Load(ctx context.Context, reader client.Reader, namespace string, spec v1alpha3.CommitSigning) (Key, error) {
	secret, err := readSecret(ctx, reader, namespace, spec)
	if err != nil {
		return Key{}, err
	}
	return keyIn(secret, spec)
}

// keyIn parses the key spec names out of secret (nil when the Secret does
// not exist).
func keyIn(secret *corev1.Secret, spec v1alpha3.CommitSigning) (Key, error) {
	name, key := Ref(spec)
	if secret == nil {
		return Key{}, fmt.Errorf("%w: Secret %s (spec.commit.signing.secretRef) not found", ErrKeyMissing, name)
	}
	source := fmt.Sprintf("Secret %s/%s key %q", secret.Namespace, name, key)
	private := secret.Data[key]
	if len(bytes.TrimSpace(private)) == 0 {
		return Key{}, fmt.Errorf("%w: %s does not exist or is empty", ErrKeyMissing, source)
	}
	signer, err := sshsign.Parse(private)
	if err != nil {
		return Key{}, fmt.Errorf("%w: %s: %w", ErrKeyInvalid, source, err)
	}
	return Key{Signer: signer, ResourceVersion: secret.ResourceVersion}, nil
}

// readSecret returns the Secret spec names, nil when it does not exist.
func readSecret(ctx context.Context, reader client.Reader, namespace string, spec v1alpha3.CommitSigning) (*corev1.Secret, error) {
	name, _ := Ref(spec)
	secret := &corev1.Secret{}
	err := reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, secret)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading signing key Secret %s/%s: %w", namespace, name, err)
	}
	return secret, nil
}

// maxGenerateAttempts bounds the read-write rounds of Ensure when another
// writer changes the Secret between its read and its write.
const maxGenerateAttempts = 3

// Ensure returns the signing key of spec, generating an ed25519 key into
// the Secret first when spec.GenerateWhenMissing is set and the Secret
// holds none: it creates the Secret when it does not exist, or adds the key
// to it. A key that exists is never replaced: the write names the
// resourceVersion it read, so a key another writer added in between wins.
//
// comment goes into the generated key ("who made this"). reader should read
// the API server directly; writer writes Secrets.
func Ensure(ctx context.Context, reader client.Reader, writer client.Writer, namespace string,
	spec v1alpha3.CommitSigning, comment string) (Key, error) {
	for attempt := 1; ; attempt++ {
		secret, err := readSecret(ctx, reader, namespace, spec)
		if err != nil {
			return Key{}, err
		}
		key, err := keyIn(secret, spec)
		if !errors.Is(err, ErrKeyMissing) || !spec.GenerateWhenMissing {
			return key, err
		}
		key, err = generateInto(ctx, writer, namespace, secret, spec, comment)
		if (apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)) && attempt < maxGenerateAttempts {
			continue // someone else wrote the Secret: read what they wrote
		}
		return key, err
	}
}

// generateInto writes a new key into secret (nil: create the Secret).
func generateInto(ctx context.Context, writer client.Writer, namespace string, secret *corev1.Secret,
	spec v1alpha3.CommitSigning, comment string) (Key, error) {
	name, key := Ref(spec)
	private, err := sshsign.Generate(comment)
	if err != nil {
		return Key{}, err
	}
	signer, err := sshsign.Parse(private)
	if err != nil {
		return Key{}, fmt.Errorf("reading back the generated key: %w", err)
	}
	if secret == nil {
		secret = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name,
				Labels: map[string]string{"app.kubernetes.io/managed-by": "gitops-reverser"}},
			Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{key: private},
		}
		if err := writer.Create(ctx, secret); err != nil {
			return Key{}, fmt.Errorf("creating Secret %s/%s with a generated signing key: %w", namespace, name, err)
		}
	} else {
		secret = secret.DeepCopy()
		if secret.Data == nil {
			secret.Data = map[string][]byte{}
		}
		secret.Data[key] = private
		// Update carries the resourceVersion read: a concurrent change is a
		// conflict, never silently overwritten.
		if err := writer.Update(ctx, secret); err != nil {
			return Key{}, fmt.Errorf("adding a generated signing key to Secret %s/%s: %w", namespace, name, err)
		}
	}
	return Key{Signer: signer, ResourceVersion: secret.ResourceVersion, Generated: true}, nil
}
