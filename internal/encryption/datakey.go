package encryption

import (
	"crypto/hkdf"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"

	"filippo.io/age"
)

// Data keys are derived, not random, whenever the Encryptor holds
// identities: HKDF-SHA256 of the identities' secret keys, per object. An
// existing file's data key is reused (to keep unchanged values' ciphertext)
// only when it is the key derived for that object. A data key that only
// opens with the operator's identity proves nothing: anyone can wrap a key
// to a public recipient, so a file planted in the repository with a key its
// author knows would otherwise have the operator encrypt the cluster's
// values under it.
const dataKeySalt = "gitops-reverser SOPS data key v1"

// keyRoot is the secret data keys derive from: a digest of the identities'
// secret keys, sorted so their order does not matter. It is nil when there
// are no identities, or one cannot be written out as text.
func keyRoot(ids []age.Identity) []byte {
	var secrets []string
	for _, id := range ids {
		s, ok := id.(fmt.Stringer)
		if !ok {
			return nil
		}
		secrets = append(secrets, s.String())
	}
	if len(secrets) == 0 {
		return nil
	}
	slices.Sort(secrets)
	sum := sha256.Sum256([]byte(strings.Join(secrets, "\n")))
	return sum[:]
}

// objectDataKey is the data key of object's file.
func (e *Encryptor) objectDataKey(object string) ([]byte, error) {
	key, err := hkdf.Key(sha256.New, e.root, []byte(dataKeySalt), object, 32)
	if err != nil {
		return nil, fmt.Errorf("deriving a data key: %w", err)
	}
	return key, nil
}
