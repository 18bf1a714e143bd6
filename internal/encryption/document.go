package encryption

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	yaml "go.yaml.in/yaml/v3"
)

// The YAML side of a SOPS document is done here rather than with sops'
// stores/yaml: that package (through sops/config and sops/stores) links
// every cloud KMS SDK sops supports, some 40 MB of binary, for a
// conversion this small. The values are typed as the sops YAML store types
// them, so the MAC and the cipher see what sops would.

// metadataKey is the top-level key sops keeps its metadata under.
const metadataKey = "sops"

// metadata is the sops block of a file the operator writes: one age key
// group and an encrypted_regex. Fields are in sops' own order. A file with
// any other field (KMS or PGP keys, key groups, other rules) does not load
// into it, and is encrypted afresh rather than reused.
type metadata struct {
	Age            []ageStanza `yaml:"age"`
	EncryptedRegex string      `yaml:"encrypted_regex"`
	LastModified   string      `yaml:"lastmodified"`
	MAC            string      `yaml:"mac"`
	Version        string      `yaml:"version"`
}

// ageStanza is the data key encrypted to one age recipient.
type ageStanza struct {
	Enc       string `yaml:"enc"`
	Recipient string `yaml:"recipient"`
}

// parseDocument reads one YAML mapping document into a tree, typed as sops
// types it (a scalar decodes to what YAML says it is).
// Comments are dropped: the operator writes none, and sops keeps them out
// of the MAC.
func parseDocument(text []byte) (branch, error) {
	dec := yaml.NewDecoder(bytes.NewReader(text))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("parsing YAML: %w", err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, errors.New("want exactly one YAML document")
	}
	if len(doc.Content) != 1 {
		return nil, errors.New("the YAML document is not a mapping")
	}
	return documentTree(doc.Content[0])
}

// documentTree reads a document's top node, a mapping, into a tree.
func documentTree(top *yaml.Node) (branch, error) {
	if top.Kind != yaml.MappingNode {
		return nil, errors.New("the YAML document is not a mapping")
	}
	value, err := treeValue(top)
	if err != nil {
		return nil, err
	}
	return value.(branch), nil
}

func treeValue(n *yaml.Node) (any, error) {
	switch n.Kind {
	case yaml.MappingNode:
		b := make(branch, 0, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := n.Content[i]
			if key.Kind != yaml.ScalarNode || key.ShortTag() != "!!str" {
				return nil, fmt.Errorf("line %d: a mapping key is not a string", key.Line)
			}
			value, err := treeValue(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			b = append(b, item{key: key.Value, value: value})
		}
		return b, nil
	case yaml.SequenceNode:
		items := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			value, err := treeValue(c)
			if err != nil {
				return nil, err
			}
			items = append(items, value)
		}
		return items, nil
	case yaml.AliasNode:
		return treeValue(n.Alias)
	case yaml.ScalarNode:
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, fmt.Errorf("line %d: %w", n.Line, err)
		}
		return v, nil
	}
	return nil, fmt.Errorf("line %d: unexpected YAML node", n.Line)
}

// splitMetadata separates a SOPS document into its tree and its metadata.
func splitMetadata(text []byte) (branch, metadata, error) {
	b, err := parseDocument(text)
	if err != nil {
		return nil, metadata{}, err
	}
	for i, it := range b {
		if it.key != metadataKey {
			continue
		}
		m, err := readMetadata(it.value)
		if err != nil {
			return nil, metadata{}, err
		}
		return append(b[:i:i], b[i+1:]...), m, nil
	}
	return nil, metadata{}, errors.New("not a SOPS document: no sops metadata")
}

// readMetadata decodes the sops block strictly: an unknown field is an
// error.
func readMetadata(value any) (metadata, error) {
	node, err := documentNode(value)
	if err != nil {
		return metadata{}, err
	}
	text, err := yaml.Marshal(node)
	if err != nil {
		return metadata{}, fmt.Errorf("reading sops metadata: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(text))
	dec.KnownFields(true)
	var m metadata
	if err := dec.Decode(&m); err != nil {
		return metadata{}, fmt.Errorf("sops metadata the operator does not write: %w", err)
	}
	return m, nil
}

// renderDocument writes a tree, and the sops block when m is set, as YAML
// with two-space indentation like the operator's plaintext files.
func renderDocument(b branch, m *metadata) ([]byte, error) {
	root, err := documentNode(b)
	if err != nil {
		return nil, err
	}
	if m != nil {
		block := &yaml.Node{}
		if err := block.Encode(m); err != nil {
			return nil, fmt.Errorf("rendering sops metadata: %w", err)
		}
		root.Content = append(root.Content, keyNode(metadataKey), block)
	}
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return nil, fmt.Errorf("rendering YAML: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("rendering YAML: %w", err)
	}
	return out.Bytes(), nil
}

// documentNode turns a tree value back into YAML nodes.
func documentNode(value any) (*yaml.Node, error) {
	switch v := value.(type) {
	case branch:
		n := &yaml.Node{Kind: yaml.MappingNode}
		for _, it := range v {
			child, err := documentNode(it.value)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, keyNode(it.key), child)
		}
		return n, nil
	case []any:
		n := &yaml.Node{Kind: yaml.SequenceNode}
		for _, item := range v {
			child, err := documentNode(item)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, child)
		}
		return n, nil
	}
	n := &yaml.Node{}
	if err := n.Encode(value); err != nil {
		return nil, fmt.Errorf("rendering a %T value: %w", value, err)
	}
	return n, nil
}

// keyNode is a mapping key, quoted when YAML would read it as another type.
func keyNode(key string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}
}
