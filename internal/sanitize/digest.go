package sanitize

import (
	"crypto/sha256"
	"encoding/hex"

	yaml "go.yaml.in/yaml/v3"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Render is what the mirror writes of obj, before any encryption: the YAML
// of its desired-state projection.
func Render(obj *unstructured.Unstructured) ([]byte, error) {
	return Marshal(Sanitize(obj))
}

// RenderNode is Render plus the tree the bytes were encoded from
// (MarshalNode): the write path hands it to the planner, which then parses
// nothing of what was just rendered.
func RenderNode(obj *unstructured.Unstructured) ([]byte, *yaml.Node, error) {
	return MarshalNode(Sanitize(obj))
}

// ContentDigest is the hex SHA-256 of rendered content. It is the one
// digest of what the mirror writes: the stream compares it with what it
// last wrote of an object, and the attribution join compares it with the
// digest an admission review carried (Digest).
func ContentDigest(content []byte) string {
	sum := sha256.Sum256(content)
	return hex.EncodeToString(sum[:])
}

// Digest is ContentDigest of Render(obj): what the mirror would write of
// obj, so a digest taken of an admission review's object equals the one the
// stream takes of the watched object when their desired state is the same,
// whatever the server-owned metadata, status or field order. It is "" for
// an object that cannot be rendered (the mirror writes nothing of it).
func Digest(obj *unstructured.Unstructured) string {
	content, err := Render(obj)
	if err != nil || obj == nil {
		return ""
	}
	return ContentDigest(content)
}
