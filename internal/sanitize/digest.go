package sanitize

import (
	"crypto/sha256"
	"encoding/hex"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Digest is the hex SHA-256 of what the mirror writes for obj: its
// desired-state projection rendered as stable YAML, before encryption.
// Two objects with the same digest write the same file. It is "" for a nil
// object or one that cannot be rendered.
func Digest(obj *unstructured.Unstructured) string {
	if obj == nil {
		return ""
	}
	out, err := Marshal(Sanitize(obj))
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(out)
	return hex.EncodeToString(sum[:])
}
