package manifest

import (
	"fmt"

	yaml "go.yaml.in/yaml/v3"

	"github.com/configbutler/gitops-reverser/internal/manifest/yamledit"
)

// document is what the index knows about one Kubernetes object in a file.
type document struct {
	id ObjectID // Resource is unknown from a file and stays empty
	// encrypted marks a SOPS document (a top-level "sops" mapping): the rule
	// that plaintext never shares a file with ciphertext is checked on it.
	encrypted bool
	// canonical marks a text that is exactly the operator's rendering of
	// the object (an Upsert with a Node, written verbatim): a change
	// replaces it whole, with nothing to keep and so nothing to parse.
	canonical bool
	// tree caches the parsed text of a document the operator did not write
	// verbatim (comments, another key order or quoting kept by the in-place
	// editor), so that the next edit parses it no more. Only such documents
	// pay its memory, and only the last ones edited (treeRing); nil until an
	// edit first needs it. It is read, never modified.
	tree *yaml.Node
	// inRing marks a document whose tree the index's treeRing holds.
	inRing bool
}

// written is doc as a new text of it holds it: canonical when the text is
// the operator's rendering, else with the tree of that text when known.
func (doc *document) written(canonical bool, tree *yaml.Node) *document {
	out := *doc
	out.canonical, out.tree, out.inRing = canonical, nil, false
	if !canonical {
		out.tree = tree
	}
	return &out
}

// constError is an error that can be a constant, so sentinels need no
// package-level variable.
type constError string

func (e constError) Error() string { return string(e) }

// errNotAnObject is wrapped by parse errors that mean "valid YAML, but not a
// Kubernetes object", as opposed to invalid YAML.
const errNotAnObject constError = "not a Kubernetes object"

// objectOf reads a Kubernetes identity from a decoded document: apiVersion,
// kind and metadata.name must be non-empty strings; metadata.namespace is
// optional.
func objectOf(top *yaml.Node) (*document, error) {
	if top.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%w: the document is not a mapping", errNotAnObject)
	}
	apiVersion, err := stringField(top, "apiVersion")
	if err != nil {
		return nil, err
	}
	kind, err := stringField(top, "kind")
	if err != nil {
		return nil, err
	}
	meta := yamledit.MappingValue(top, "metadata")
	if meta == nil || meta.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%w: metadata is missing or not a mapping", errNotAnObject)
	}
	name, err := stringField(meta, "name")
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	namespace, err := optionalStringField(meta, "namespace")
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	group, version := splitAPIVersion(apiVersion)
	sops := yamledit.MappingValue(top, "sops")
	return &document{
		id:        ObjectID{Group: group, Version: version, Kind: kind, Namespace: namespace, Name: name},
		encrypted: sops != nil && sops.Kind == yaml.MappingNode,
	}, nil
}

// stringField reads a required, non-empty string scalar.
func stringField(mapping *yaml.Node, key string) (string, error) {
	node := yamledit.MappingValue(mapping, key)
	switch {
	case node == nil:
		return "", fmt.Errorf("%w: %s is missing", errNotAnObject, key)
	case node.Kind != yaml.ScalarNode || node.ShortTag() != "!!str":
		return "", fmt.Errorf("%w: %s is not a string", errNotAnObject, key)
	case node.Value == "":
		return "", fmt.Errorf("%w: %s is empty", errNotAnObject, key)
	}
	return node.Value, nil
}

// optionalStringField reads a string scalar that may be absent, null or
// empty; all three mean "".
func optionalStringField(mapping *yaml.Node, key string) (string, error) {
	node := yamledit.MappingValue(mapping, key)
	switch {
	case node == nil, node.Kind == yaml.ScalarNode && node.ShortTag() == "!!null":
		return "", nil
	case node.Kind != yaml.ScalarNode || node.ShortTag() != "!!str":
		return "", fmt.Errorf("%w: %s is not a string", errNotAnObject, key)
	}
	return node.Value, nil
}

// parseSection turns a section into a document, nil for a section without
// one.
func parseSection(text []byte) (*document, error) {
	top, err := yamledit.Decode(text)
	if err != nil || top == nil {
		return nil, err
	}
	return objectOf(top)
}

// withoutNamespace is a copy of a document's tree without
// metadata.namespace.
func withoutNamespace(top *yaml.Node) *yaml.Node {
	bare := yamledit.CopyNode(top)
	if meta := yamledit.MappingValue(bare, "metadata"); meta != nil && meta.Kind == yaml.MappingNode {
		yamledit.SetOrDelete(meta, "namespace", nil)
	}
	return bare
}
