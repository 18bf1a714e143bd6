package manifest

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	kustomize "sigs.k8s.io/kustomize/api/types"

	"github.com/configbutler/gitops-reverser/gitfile"
	"github.com/configbutler/gitops-reverser/internal/manifest/kustomization"
	"github.com/configbutler/gitops-reverser/internal/manifest/yamledit"
)

// The workspace's kustomize steps: the placement ladder's kustomization
// step, edit-through, and the resources: entries a plan adds and removes.
// The kustomization package reads and edits the files; these decide, per
// plan, which kustomization and which entry.

// kustomizationStep is the second step of the placement ladder for one plan.
type kustomizationStep struct {
	path   string
	usable bool // the one kustomization exists and its resources: can be edited
}

// kustomizationRoot looks up, once per plan, the kustomization new files go
// beside: usable only when it is the subtree's only one and its resources:
// list can be edited in place.
func (ws *workspace) kustomizationRoot() *kustomizationStep {
	if ws.root == nil {
		ws.root = &kustomizationStep{}
		if p, ok := ws.ix.kustomizationRoot(); ok {
			ws.parses++
			probe := kustomization.NewEdit()
			probe.Add = []string{"probe.yaml"}
			_, err := kustomization.EditFile(ws.ix.others[p], probe)
			ws.root = &kustomizationStep{path: p, usable: err == nil}
		}
	}
	return ws.root
}

// rootBuilds reports whether a file beside the kustomization root would
// build into the object w writes: not when the root sets a namespace other
// than the object's, which a build would move it into.
func (ws *workspace) rootBuilds(w write) bool {
	namespace := ws.rootNamespace()
	return w.id.Namespace == "" || namespace == "" || namespace == w.id.Namespace
}

// rootSetsNamespace reports whether the new object w writes, beside the
// kustomization root, is still that object with its namespace left out.
func (ws *workspace) rootSetsNamespace(w write) bool {
	if w.sensitive || w.id.Namespace == "" {
		return false
	}
	bare := w.id
	bare.Namespace = ""
	return slices.ContainsFunc(answersTo(bare, ws.rootNamespace()), w.id.SameObject)
}

// rootNamespace is the namespace: of the kustomization root ("" for none):
// no other kustomization reads it, so its own is what the build sets.
func (ws *workspace) rootNamespace() string {
	if k := ws.kustomization(ws.kustomizationRoot().path); k != nil {
		return k.Namespace
	}
	return ""
}

// Edit-through: a live value that a kustomization's images: or replicas:
// entry produces is written back to that entry, and the source manifest
// keeps its own value (and its bytes). What the inversion cannot express
// with the fields the entry already declares falls back to the plain
// in-place patch of the source.

// replicaKinds are the kinds kustomize's replicas: entries apply to.
var replicaKinds = map[string]bool{"Deployment": true, "StatefulSet": true, "ReplicaSet": true, "ReplicationController": true}

// governing are the kustomizations that list the file at p in resources:.
func (ws *workspace) governing(p string) []string {
	var found []string
	for k := range ws.ix.kustomizations {
		entry, below := kustomization.ResourceEntry(k, p)
		if !below {
			continue
		}
		parsed := ws.kustomization(k)
		if parsed == nil {
			continue
		}
		for _, r := range parsed.Resources {
			if strings.TrimPrefix(r, "./") == entry {
				found = append(found, k)
				break
			}
		}
	}
	return found
}

// kustomization is the parsed kustomization at p, as the index read it;
// nil when it cannot be read (the gate has refused it then).
func (ws *workspace) kustomization(p string) *kustomize.Kustomization {
	if k, ok := ws.ix.kustomizations[p]; ok {
		return k.Parsed
	}
	return nil
}

// editThrough returns desired with every value an override entry produces
// set back to the source's (old's) value, recording the entry edits that
// make the build render desired's values; desired itself when no entry
// governs the document.
func (ws *workspace) editThrough(p string, old, desired *yaml.Node) (*yaml.Node, bool) {
	var adjusted *yaml.Node
	for _, k := range ws.governing(p) {
		parsed := ws.kustomization(k)
		if len(parsed.Replicas) == 0 && len(parsed.Images) == 0 {
			continue
		}
		if adjusted == nil {
			adjusted = yamledit.CopyNode(desired)
		}
		ws.replicasThrough(k, parsed, old, adjusted)
		ws.imagesThrough(k, parsed, old, adjusted)
	}
	if adjusted == nil || yamledit.Same(adjusted, desired) {
		return desired, false
	}
	return adjusted, true
}

func (ws *workspace) replicasThrough(k string, parsed *kustomize.Kustomization, old, adjusted *yaml.Node) {
	kind, _ := optionalStringField(adjusted, "kind")
	name := objectName(adjusted)
	if !replicaKinds[kind] {
		return
	}
	for _, r := range parsed.Replicas {
		if r.Name != name {
			continue
		}
		spec := yamledit.MappingValue(adjusted, "spec")
		live := intAt(spec, "replicas")
		if spec == nil || live == nil {
			return
		}
		if *live != r.Count {
			ws.resources.Of(k).Replicas[r.Name] = *live
		}
		yamledit.SetOrDelete(spec, "replicas", yamledit.MappingValue(yamledit.Lookup(old, "spec"), "replicas"))
		return
	}
}

func (ws *workspace) imagesThrough(k string, parsed *kustomize.Kustomization, old, adjusted *yaml.Node) {
	oldContainers, desiredContainers := containers(old), containers(adjusted)
	for key, d := range desiredContainers {
		o, ok := oldContainers[key]
		if !ok {
			continue
		}
		source, live := yamledit.MappingValue(o, "image"), yamledit.MappingValue(d, "image")
		if source == nil || live == nil || source.Kind != yaml.ScalarNode || live.Kind != yaml.ScalarNode {
			continue
		}
		for _, entry := range parsed.Images {
			if entry.Name != kustomization.ImageName(source.Value) {
				continue
			}
			if ws.imageThrough(k, entry, source.Value, live.Value) {
				yamledit.SetOrDelete(d, "image", source)
			}
			break
		}
	}
}

// imageThrough records the entry edit that renders live from source, and
// reports whether the source keeps its image: false when the inversion
// cannot be expressed, or another container of the commit already asked the
// entry for something else.
func (ws *workspace) imageThrough(k string, entry kustomize.Image, source, live string) bool {
	edits := ws.resources.Of(k).Images
	if earlier, edited := edits[entry.Name]; edited {
		return kustomization.ApplyImage(earlier, source) == live
	}
	if kustomization.ApplyImage(entry, source) == live {
		return true
	}
	inverted, ok := kustomization.InvertImage(entry, source, live)
	if ok {
		edits[entry.Name] = inverted
	}
	return ok
}

// containers finds the containers of a workload, a pod template or a
// CronJob, keyed by list and name.
func containers(top *yaml.Node) map[string]*yaml.Node {
	found := map[string]*yaml.Node{}
	specs := []*yaml.Node{yamledit.Lookup(top, "spec")}
	specs = append(specs, yamledit.Lookup(top, "spec", "template", "spec"), yamledit.Lookup(top, "spec", "jobTemplate", "spec", "template", "spec"))
	for _, spec := range specs {
		if spec == nil || spec.Kind != yaml.MappingNode {
			continue
		}
		for _, list := range []string{"containers", "initContainers"} {
			items := yamledit.MappingValue(spec, list)
			if items == nil || items.Kind != yaml.SequenceNode {
				continue
			}
			for _, c := range items.Content {
				if c.Kind == yaml.MappingNode {
					found[list+"/"+yamledit.Name(c)] = c
				}
			}
		}
	}
	return found
}

// --- resources: entries ---

// kustomizationChanges edits the resources: lists of the kustomizations the
// plan placed files beside or deleted files under, keeping every comment
// and the rest of the file as it is.
func (ws *workspace) kustomizationChanges(deleted []string) ([]gitfile.Change, error) {
	for _, file := range deleted {
		for p := range ws.ix.kustomizations {
			if entry, below := kustomization.ResourceEntry(p, file); below {
				ws.resources.Of(p).Remove = append(ws.resources.Of(p).Remove, entry)
			}
		}
	}
	var changes []gitfile.Change
	for p, edit := range ws.resources {
		content := ws.ix.others[p]
		edited, err := kustomization.EditFile(content, edit)
		if err != nil {
			return nil, fmt.Errorf("edit the resources of %s: %w", p, err)
		}
		if !bytes.Equal(edited, content) {
			changes = append(changes, gitfile.Change{Path: p, Content: edited})
		}
	}
	return changes, nil
}

// --- small node helpers ---

func objectName(top *yaml.Node) string {
	return yamledit.Name(yamledit.Lookup(top, "metadata"))
}

func intAt(m *yaml.Node, key string) *int64 {
	n := yamledit.Lookup(m, key)
	if n == nil || n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		return nil
	}
	v, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		return nil
	}
	return &v
}
