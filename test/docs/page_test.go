package docs

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// block is one fenced code block of a page. A block right after the line
// "<!-- refused -->" shows what the API server refuses.
type block struct {
	lang, text string
	refused    bool
}

// refusedMarker, on the line before a yaml block, marks its manifests as
// deliberately invalid: the test checks that the API server refuses them.
const refusedMarker = "<!-- refused -->"

// page is a documentation page's code blocks, in order.
type page struct {
	path   string
	blocks []block
}

func readPage(t *testing.T, path string) page {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	p := page{path: path}
	var current *block
	var indent, previous string
	for _, line := range strings.Split(string(raw), "\n") {
		trimmed := strings.TrimLeft(line, " ")
		switch {
		case current == nil && strings.HasPrefix(trimmed, "```"):
			// Blocks inside list items are indented; the indent is not
			// part of their text.
			indent = line[:len(line)-len(trimmed)]
			current = &block{lang: strings.TrimPrefix(trimmed, "```"), refused: previous == refusedMarker}
		case current != nil && trimmed == "```":
			p.blocks = append(p.blocks, *current)
			current = nil
		case current != nil:
			current.text += strings.TrimPrefix(line, indent) + "\n"
		case strings.TrimSpace(line) != "":
			previous = strings.TrimSpace(line)
		}
	}
	require.Nil(t, current, "%s: a code block is not closed", path)
	return p
}

// commands returns the shell commands of the page's sh blocks as argument
// lists, continuation lines joined and comments dropped.
func (p page) commands(t *testing.T) [][]string {
	t.Helper()
	var out [][]string
	for _, b := range p.blocks {
		if b.lang != "sh" {
			continue
		}
		joined := strings.ReplaceAll(b.text, "\\\n", " ")
		for _, line := range strings.Split(joined, "\n") {
			args, err := splitShell(line)
			require.NoError(t, err, "%s: %q", p.path, line)
			if len(args) > 0 {
				out = append(out, args)
			}
		}
	}
	return out
}

// objects returns the Kubernetes objects of the page's yaml blocks:
// documents with an apiVersion and a kind. Fragments and blocks marked
// refused are skipped.
func (p page) objects(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	return p.manifests(t, false)
}

// refusedObjects returns the objects of the yaml blocks marked refused.
func (p page) refusedObjects(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	return p.manifests(t, true)
}

func (p page) manifests(t *testing.T, refused bool) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, b := range p.blocks {
		if b.lang != "yaml" || b.refused != refused {
			continue
		}
		for _, obj := range decodeObjects(t, b.text) {
			if obj.GetAPIVersion() != "" && obj.GetKind() != "" {
				out = append(out, obj)
			}
		}
	}
	return out
}

// namedYAML returns the yaml block whose first line is the comment
// "# name", which is how a page names a values file it then passes to helm.
func (p page) namedYAML(name string) (string, bool) {
	for _, b := range p.blocks {
		if b.lang == "yaml" && strings.HasPrefix(b.text, "# "+name+"\n") {
			return b.text, true
		}
	}
	return "", false
}

// decodeObjects splits multi-document YAML into objects.
func decodeObjects(t *testing.T, text string) []*unstructured.Unstructured {
	t.Helper()
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader([]byte(text)), 4096)
	var out []*unstructured.Unstructured
	for {
		var doc map[string]any
		err := decoder.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err, "decoding YAML:\n%s", text)
		if doc != nil {
			out = append(out, &unstructured.Unstructured{Object: doc})
		}
	}
}

// splitShell splits a command line into arguments the way a POSIX shell
// does for the plain commands the pages use: whitespace, single and double
// quotes, and a # that starts a comment.
func splitShell(line string) ([]string, error) {
	var args []string
	var current strings.Builder
	inArg := false
	var quote rune
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			current.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inArg = r, true
		case r == '#' && !inArg:
			return args, nil
		case r == ' ' || r == '\t':
			if inArg {
				args = append(args, current.String())
				current.Reset()
				inArg = false
			}
		default:
			current.WriteRune(r)
			inArg = true
		}
	}
	if quote != 0 {
		return nil, errors.New("unterminated quote")
	}
	if inArg {
		args = append(args, current.String())
	}
	return args, nil
}

// flagValues returns the values of a repeated flag (--set, -f): "--flag v"
// and "--flag=v" forms alike.
func flagValues(args []string, names ...string) []string {
	var out []string
	for i, a := range args {
		for _, n := range names {
			switch {
			case a == n && i+1 < len(args):
				out = append(out, args[i+1])
			case strings.HasPrefix(a, n+"="):
				out = append(out, strings.TrimPrefix(a, n+"="))
			}
		}
	}
	return out
}
