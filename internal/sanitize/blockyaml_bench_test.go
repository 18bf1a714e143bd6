package sanitize

import (
	"strings"
	"testing"
)

// BenchmarkRenderTree is the rendering alone, of the tree MarshalNode
// builds for a small ConfigMap and for one with four 20-line files: the
// block writer against yaml.v3's Encoder, the reference it is held to.
func BenchmarkRenderTree(b *testing.B) {
	small := map[string]interface{}{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]interface{}{"name": "fleet-00001", "namespace": "fleet-3", "labels": map[string]interface{}{"app": "shop"}},
		"data":     map[string]interface{}{"key-0": "initial value 0 of fleet-00001", "enabled": "true", "ratio": "1.0"},
	}
	files := map[string]interface{}{}
	for _, key := range []string{"nginx.conf", "app.properties", "logging.yaml", "feature-flags"} {
		files[key] = strings.Repeat("some.setting = value-"+key+"\n", 20)
	}
	withFiles := map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap", "metadata": small["metadata"], "data": files}
	for _, c := range []struct {
		name string
		obj  map[string]interface{}
	}{{"small", small}, {"four-20-line-files", withFiles}} {
		root := objectTree(b, c.obj)
		b.Run(c.name+"/block-writer", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := writeBlock(root); !ok {
					b.Fatal("the block writer left the tree to yaml.v3")
				}
			}
		})
		b.Run(c.name+"/yaml.v3", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := encodeWithYAMLv3(root); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
