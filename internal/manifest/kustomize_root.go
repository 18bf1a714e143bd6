package manifest

import (
	"bytes"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	kustomize "sigs.k8s.io/kustomize/api/types"

	"github.com/configbutler/gitops-reverser/internal/manifest/yamledit"
)

// PlacementSource says which step of the placement ladder chose a new
// object's path (gitopsreverser_placements_total{source}).
type PlacementSource string

const (
	// PlacementDeclared: the GitTarget's spec.placement template.
	PlacementDeclared PlacementSource = "declared"
	// PlacementKustomization: beside the subtree's one kustomize root, which
	// gets a resources: entry for the file in the same commit.
	PlacementKustomization PlacementSource = "kustomization"
	// PlacementCanonical: the built-in {namespace}/{group}/{resource}/{name}.yaml.
	PlacementCanonical PlacementSource = "canonical"
)

// PlacementSources lists every source, for metrics to start at zero.
func PlacementSources() []PlacementSource {
	return []PlacementSource{PlacementDeclared, PlacementKustomization, PlacementCanonical}
}

// kustomizationRoot is the subtree's one kustomize root: the only
// kustomization no other kustomization in the subtree reads as a directory
// resource (a top-level kustomization listing apps/ and infra/, each with
// their own, is the one root). None, or more than one, is not a root to
// place by: the ladder declines to the canonical path. The canonical tree is
// one a resources: graph cannot reach, so the root must take the file.
func (ix *Index) kustomizationRoot() (root string, ok bool) {
	roots := buildRoots(ix.kustomizations)
	if len(roots) != 1 {
		return "", false
	}
	return roots[0], true
}

// besideKustomization is a new object's path beside the kustomization:
// {kind}-{name}.yaml for a cluster-scoped object, {namespace}-{kind}-{name}.yaml
// otherwise, the kind in lower case.
func besideKustomization(kustomization string, id ObjectID, sensitive bool) (string, error) {
	parts := []string{strings.ToLower(id.Kind), id.Name}
	if id.Namespace != "" {
		parts = append([]string{id.Namespace}, parts...)
	}
	for _, part := range parts {
		if err := checkSegment(part); err != nil {
			return "", fmt.Errorf("place %s beside %s: %w", id, kustomization, err)
		}
	}
	suffix := plainSuffix
	if sensitive {
		suffix = sensitiveSuffix
	}
	placed := path.Join(path.Dir(kustomization), FitSegment(strings.Join(parts, "-"), suffix))
	if len(placed) > MaxPathBytes {
		return "", fmt.Errorf("place %s: the path is %d bytes, more than %d", id, len(placed), MaxPathBytes)
	}
	return placed, nil
}

// resourceEdits collects, per kustomization, the resources: entries a plan
// adds (files it places beside it) and removes (files it deletes).
type resourceEdits map[string]*resourceEdit

type resourceEdit struct {
	add, remove []string
	// replicas and images are edit-through: new counts, and new values of
	// the fields an images: entry declares, by entry name.
	replicas map[string]int64
	images   map[string]kustomize.Image
}

func newResourceEdit() *resourceEdit {
	return &resourceEdit{replicas: map[string]int64{}, images: map[string]kustomize.Image{}}
}

func (r resourceEdits) of(kustomization string) *resourceEdit {
	edit, ok := r[kustomization]
	if !ok {
		edit = newResourceEdit()
		r[kustomization] = edit
	}
	return edit
}

// resourceEntry is file as a kustomization in another directory lists it,
// or false when the file is not below it.
func resourceEntry(kustomization, file string) (string, bool) {
	dir := path.Dir(kustomization)
	if dir == "." {
		return file, true
	}
	return strings.CutPrefix(file, dir+"/")
}

// kustomizationChanges edits the resources: lists of the kustomizations the
// plan placed files beside or deleted files under, keeping every comment
// and the rest of the file as it is.
func (ws *workspace) kustomizationChanges(deleted []string) ([]Change, error) {
	for _, file := range deleted {
		for p := range ws.ix.kustomizations {
			if entry, below := resourceEntry(p, file); below {
				ws.resources.of(p).remove = append(ws.resources.of(p).remove, entry)
			}
		}
	}
	var changes []Change
	for p, edit := range ws.resources {
		content := ws.ix.others[p]
		edited, err := editKustomization(content, edit)
		if err != nil {
			return nil, fmt.Errorf("edit the resources of %s: %w", p, err)
		}
		if !bytes.Equal(edited, content) {
			changes = append(changes, Change{Path: p, Content: edited})
		}
	}
	return changes, nil
}

// editKustomization adds entries to a kustomization's resources: list (once
// each), removes entries ("x.yaml" or "./x.yaml"), and sets the count of
// replicas: entries and the declared fields of images: entries, editing the
// file in place.
func editKustomization(content []byte, edit *resourceEdit) ([]byte, error) {
	add, remove := edit.add, edit.remove
	top, err := yamledit.Decode(content)
	if err != nil {
		return nil, err
	}
	if top == nil || top.Kind != yaml.MappingNode {
		return nil, constError("the kustomization is not a mapping")
	}
	removed := make(map[string]bool, len(remove))
	for _, entry := range remove {
		removed[entry], removed["./"+entry] = true, true
	}
	desired := *top
	desired.Content = append([]*yaml.Node(nil), top.Content...)
	list := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
	if i, found := yamledit.IndexOfKey(top, "resources"); found {
		old := top.Content[i+1]
		if old.Kind != yaml.SequenceNode {
			return nil, constError("resources is not a list")
		}
		copied := *old
		list = &copied
		list.Content = nil
		for _, item := range old.Content {
			if !removed[item.Value] {
				list.Content = append(list.Content, item)
			}
		}
		desired.Content[i+1] = list
	} else if len(add) > 0 {
		desired.Content = append(desired.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "resources"}, list)
	}
	listed := map[string]bool{}
	for _, item := range list.Content {
		listed[strings.TrimPrefix(item.Value, "./")] = true
	}
	sort.Strings(add)
	for _, entry := range add {
		if !listed[entry] {
			listed[entry] = true
			list.Content = append(list.Content, yamledit.StringNode(entry))
		}
	}
	if len(list.Content) == 0 && len(add) == 0 {
		list.Style |= yaml.FlowStyle // an emptied list stays a list: []
	}
	if err := setOverrides(&desired, edit); err != nil {
		return nil, err
	}
	if yamledit.Same(top, &desired) {
		return content, nil
	}
	if edited, err := yamledit.Splice(content, top, nil, &desired); err == nil {
		if check, err := yamledit.Decode(edited); err == nil && check != nil && yamledit.Same(check, &desired) {
			return edited, nil
		}
	}
	return nil, constError("the resources: list cannot be edited in place")
}

// setOverrides writes the edit-through values into the replicas: and
// images: entries of desired, a copy of the kustomization's tree.
func setOverrides(desired *yaml.Node, edit *resourceEdit) error {
	for _, field := range []string{"replicas", "images"} {
		i, found := yamledit.IndexOfKey(desired, field)
		if !found {
			continue
		}
		list := yamledit.CopyNode(desired.Content[i+1])
		desired.Content[i+1] = list
		for _, item := range list.Content {
			name := yamledit.Name(item)
			if count, ok := edit.replicas[name]; ok && field == "replicas" {
				yamledit.SetOrDelete(item, "count", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatInt(count, 10)})
			}
			if image, ok := edit.images[name]; ok && field == "images" {
				for key, value := range map[string]string{"newName": image.NewName, "newTag": image.NewTag, "digest": image.Digest} {
					if _, declared := yamledit.IndexOfKey(item, key); declared {
						yamledit.SetOrDelete(item, key, yamledit.StringNode(value))
					}
				}
			}
		}
	}
	return nil
}
