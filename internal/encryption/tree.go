package encryption

// The tree is a YAML document the way the SOPS file format sees it. It is
// our own rather than sops.Tree: the sops root package imports sops'
// key services, which link every cloud KMS SDK sops supports (some 34 MB
// of binary and 16 MiB of resident memory at start) for a format this
// small.

// branch is a YAML mapping in document order. The order is part of the
// format: the MAC hashes the values in it.
type branch []item

// item is one key of a mapping. A value is a branch, a sequence ([]any),
// nil, or a scalar as YAML decodes it: string, int, float64, bool or
// time.Time.
type item struct {
	key   string
	value any
}

// leafVisitor sees one scalar and the keys leading to it, and returns what
// replaces it (its ciphertext, or its plaintext when decrypting).
type leafVisitor func(value any, path []string) (any, error)

// walk visits every scalar of b depth first, in document order, which is
// the order SOPS encrypts values and hashes them into the MAC.
func (b branch) walk(path []string, visit leafVisitor) error {
	for i := range b {
		// A full slice expression: siblings must not share the backing
		// array of their path.
		p := append(path[:len(path):len(path)], b[i].key)
		v, err := walkValue(b[i].value, p, visit)
		if err != nil {
			return err
		}
		b[i].value = v
	}
	return nil
}

func walkValue(value any, path []string, visit leafVisitor) (any, error) {
	switch v := value.(type) {
	case nil:
		// SOPS neither encrypts a null nor hashes it into the MAC.
		return nil, nil
	case branch:
		return v, v.walk(path, visit)
	case []any:
		for i := range v {
			// Sequence items share their sequence's path: SOPS binds a
			// value to the keys above it, not to its index.
			w, err := walkValue(v[i], path, visit)
			if err != nil {
				return nil, err
			}
			v[i] = w
		}
		return v, nil
	}
	return visit(value, path)
}
