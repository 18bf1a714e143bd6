package sanitize_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/configbutler/gitops-reverser/internal/manifest"
	"github.com/configbutler/gitops-reverser/internal/sanitize"
)

const writePathObjects = 2000

// watchedConfigMap is a ConfigMap as a watch event carries it: JSON, with
// the server-owned metadata the projection drops.
func watchedConfigMap(i int, revision string) []byte {
	obj := map[string]interface{}{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]interface{}{
			"name": fmt.Sprintf("app-%04d", i), "namespace": fmt.Sprintf("ns-%02d", i%20),
			"labels": map[string]interface{}{"app": fmt.Sprintf("app-%04d", i)},
			"uid":    fmt.Sprintf("00000000-0000-0000-0000-%012d", i), "resourceVersion": revision + "00",
			"creationTimestamp": "2026-01-02T03:04:05Z",
			"managedFields":     []interface{}{map[string]interface{}{"manager": "kubectl", "operation": "Apply"}},
		},
		"data": map[string]interface{}{"app.properties": strings.Repeat("setting.value = "+revision+"\n", 15)},
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		panic(err)
	}
	return raw
}

// handover is how the branch worker hands a rendered object to the planner.
type handover int

const (
	bareYAML     handover = iota // the YAML alone, as before the tree was handed over
	replayed                     // the operator's rendering without its tree (a replay)
	renderedTree                 // the rendering with the tree sanitize built (a live change)
)

// writePathCounts counts the write path's front: JSON decodes and renders.
type writePathCounts struct{ jsonParses, renders int }

// writePathUpserts runs the write path's front for every event: one JSON
// decode (the watch), one render (sanitize), and the Upsert the branch
// worker hands the planner.
func writePathUpserts(b *testing.B, events [][]byte, how handover, counts *writePathCounts) []manifest.Op {
	ops := make([]manifest.Op, 0, len(events))
	for _, raw := range events {
		obj := &unstructured.Unstructured{}
		counts.jsonParses++
		if err := json.Unmarshal(raw, &obj.Object); err != nil {
			b.Fatal(err)
		}
		counts.renders++
		content, node, err := sanitize.RenderNode(obj)
		if err != nil {
			b.Fatal(err)
		}
		id := manifest.ObjectID{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: obj.GetNamespace(), Name: obj.GetName()}
		u := manifest.Upsert{ID: id, YAML: content, Rendered: how != bareYAML}
		if how == renderedTree {
			u.Node = node
		}
		ops = append(ops, u)
	}
	return ops
}

// BenchmarkWritePathParsesPerObject is the write path end to end for a
// commit of 2,000 changed ConfigMaps: JSON decode of the watch event,
// sanitize's render, then Plan and Apply to the index, as the worker does
// after a replay. It reports what each object costs: json-parses/obj and
// renders/obj, and yaml-parses/obj, the YAML documents the planner and the
// index decoded. "bare" hands the planner the YAML alone (the write path
// before the tree), "rendered" what the worker hands it now.
func BenchmarkWritePathParsesPerObject(b *testing.B) {
	b.Run("bare", func(b *testing.B) { benchWritePathEndToEnd(b, bareYAML) })
	b.Run("rendered", func(b *testing.B) { benchWritePathEndToEnd(b, renderedTree) })
}

func benchWritePathEndToEnd(b *testing.B, how handover) {
	events := [2][][]byte{make([][]byte, writePathObjects), make([][]byte, writePathObjects)}
	for i := range writePathObjects {
		events[0][i], events[1][i] = watchedConfigMap(i, "2"), watchedConfigMap(i, "1")
	}
	var setup writePathCounts
	files := map[string][]byte{"README.md": []byte("# existing\n")}
	for _, op := range writePathUpserts(b, events[1], bareYAML, &setup) {
		u := op.(manifest.Upsert)
		p, err := manifest.CanonicalPath(".", u.ID, false)
		if err != nil {
			b.Fatal(err)
		}
		files[p] = u.YAML
	}
	ix, err := manifest.NewIndex(".", files)
	if err != nil {
		b.Fatal(err)
	}
	// The replay after a start: every object unchanged, without its tree.
	if _, err := manifest.Plan(ix, writePathUpserts(b, events[1], replayed, &setup)); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var counts writePathCounts
	yamlParses, commits := 0, 0
	for b.Loop() {
		before := ix.Parses()
		result, err := manifest.Plan(ix, writePathUpserts(b, events[commits%2], how, &counts))
		if err != nil || len(result.Changes) != writePathObjects {
			b.Fatalf("planned %d changes, want %d: %v", len(result.Changes), writePathObjects, err)
		}
		if err := ix.Apply(result); err != nil {
			b.Fatal(err)
		}
		yamlParses += result.Parses() + ix.Parses() - before
		commits++
	}
	objects := float64(commits * writePathObjects)
	b.ReportMetric(float64(counts.jsonParses)/objects, "json-parses/obj")
	b.ReportMetric(float64(counts.renders)/objects, "renders/obj")
	b.ReportMetric(float64(yamlParses)/objects, "yaml-parses/obj")
}
