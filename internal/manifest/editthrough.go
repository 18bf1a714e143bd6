package manifest

import (
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	kustomize "sigs.k8s.io/kustomize/api/types"

	"github.com/configbutler/gitops-reverser/internal/manifest/yamledit"
)

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
		entry, below := resourceEntry(k, p)
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
		return k.parsed
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
			ws.resources.of(k).replicas[r.Name] = *live
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
			if entry.Name != imageName(source.Value) {
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
	edits := ws.resources.of(k).images
	if earlier, edited := edits[entry.Name]; edited {
		return applyImage(earlier, source) == live
	}
	if applyImage(entry, source) == live {
		return true
	}
	inverted, ok := invertImage(entry, source, live)
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

// imageName is an image reference without its tag or digest.
func imageName(image string) string {
	name, _, _ := strings.Cut(image, "@")
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name = name[:i]
	}
	return name
}

// imageParts splits an image into name, tag and digest.
func imageParts(image string) (name, tag, digest string) {
	rest, digest, _ := strings.Cut(image, "@")
	name = imageName(rest)
	tag = strings.TrimPrefix(rest[len(name):], ":")
	return name, tag, digest
}

// applyImage is what kustomize renders for source under entry.
func applyImage(entry kustomize.Image, source string) string {
	name, tag, digest := imageParts(source)
	if entry.NewName != "" {
		name = entry.NewName
	}
	switch {
	case entry.Digest != "":
		return name + "@" + entry.Digest
	case entry.NewTag != "":
		return name + ":" + entry.NewTag
	case digest != "":
		return name + "@" + digest
	case tag != "":
		return name + ":" + tag
	}
	return name
}

// invertImage changes only the fields entry declares so that it renders
// live from source; ok is false when that cannot be done.
func invertImage(entry kustomize.Image, source, live string) (kustomize.Image, bool) {
	if entry.TagSuffix != "" {
		return kustomize.Image{}, false
	}
	name, tag, digest := imageParts(live)
	inverted := entry
	if entry.NewName != "" {
		inverted.NewName = name
	}
	switch {
	case digest != "" && entry.Digest != "":
		inverted.Digest = digest
	case digest == "" && tag != "" && entry.NewTag != "" && entry.Digest == "":
		inverted.NewTag = tag
	}
	if applyImage(inverted, source) != live {
		return kustomize.Image{}, false
	}
	return inverted, true
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
