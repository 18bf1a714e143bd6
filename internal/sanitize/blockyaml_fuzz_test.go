package sanitize

import (
	"encoding/json"
	"fmt"
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

// FuzzWriteBlockMatchesYAMLv3 holds the block writer to yaml.v3 byte for
// byte: on the trees MarshalNode builds from any JSON object, and on the
// two strings as keys and values in every place a scalar can sit, with the
// styles MarshalNode gives them and with none. The seed corpus runs in
// every `go test`; `go test -fuzz FuzzWriteBlockMatchesYAMLv3` explores.
func FuzzWriteBlockMatchesYAMLv3(f *testing.F) {
	f.Add([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"v"}}`), "a", "b")
	f.Add([]byte(`{"spec":{"l":[1,2.5,true,null,{"a":[]},[{}]],"s":"x: y"}}`), "- a", "1e3")
	f.Add([]byte(`{"a":{"b":{"c":["x\ny\n",""]}}}`), "line\n\n", " lead")
	for _, s := range append(adversarialScalars, moreScalars...) {
		f.Add([]byte(`{}`), s, "v")
	}
	f.Fuzz(func(t *testing.T, object []byte, first, second string) {
		var m map[string]interface{}
		if json.Unmarshal(object, &m) == nil && len(m) > 0 {
			if root, err := mappingNode(m, topLevelRank, true); err == nil {
				requireSameAsYAMLv3(t, root, string(object))
			}
		}
		for _, pair := range [][2]*yaml.Node{
			{keyNode(first), stringNode(second)},
			{keyNode(second), stringNode(first)},
			{{Kind: yaml.ScalarNode, Tag: "!!str", Value: first}, {Kind: yaml.ScalarNode, Tag: "!!str", Value: second}},
			{{Kind: yaml.ScalarNode, Tag: "!!str", Value: first, Style: yaml.DoubleQuotedStyle}, {Kind: yaml.ScalarNode, Tag: "!!str", Value: second, Style: yaml.LiteralStyle}},
		} {
			for _, root := range scalarPlacements(pair[0], pair[1]) {
				requireSameAsYAMLv3(t, root, fmt.Sprintf("%q %q", first, second))
			}
		}
	})
}
