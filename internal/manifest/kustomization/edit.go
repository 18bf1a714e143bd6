package kustomization

import (
	"errors"
	"sort"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	kustomize "sigs.k8s.io/kustomize/api/types"

	"github.com/configbutler/gitops-reverser/internal/manifest/yamledit"
)

// Edits collects, per kustomization, the resources: entries a plan
// adds (files it places beside it) and removes (files it deletes).
type Edits map[string]*Edit

// Edit is what one plan changes in one kustomization.
type Edit struct {
	// Add and Remove are resources: entries.
	Add, Remove []string
	// Replicas and Images are edit-through: new counts, and new values of
	// the fields an images: entry declares, by entry name.
	Replicas map[string]int64
	Images   map[string]kustomize.Image
}

// NewEdit is an Edit that changes nothing yet.
func NewEdit() *Edit {
	return &Edit{Replicas: map[string]int64{}, Images: map[string]kustomize.Image{}}
}

// Of is the Edit of the kustomization at path kustomization, made on first
// use.
func (r Edits) Of(kustomization string) *Edit {
	edit, ok := r[kustomization]
	if !ok {
		edit = NewEdit()
		r[kustomization] = edit
	}
	return edit
}

// EditFile adds entries to a kustomization's resources: list (once
// each), removes entries ("x.yaml" or "./x.yaml"), and sets the count of
// replicas: entries and the declared fields of images: entries, editing the
// file in place.
func EditFile(content []byte, edit *Edit) ([]byte, error) {
	add, remove := edit.Add, edit.Remove
	top, err := yamledit.Decode(content)
	if err != nil {
		return nil, err
	}
	if top == nil || top.Kind != yaml.MappingNode {
		return nil, errors.New("the kustomization is not a mapping")
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
			return nil, errors.New("resources is not a list")
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
	return nil, errors.New("the resources: list cannot be edited in place")
}

// setOverrides writes the edit-through values into the replicas: and
// images: entries of desired, a copy of the kustomization's tree.
func setOverrides(desired *yaml.Node, edit *Edit) error {
	for _, field := range []string{"replicas", "images"} {
		i, found := yamledit.IndexOfKey(desired, field)
		if !found {
			continue
		}
		list := yamledit.CopyNode(desired.Content[i+1])
		desired.Content[i+1] = list
		for _, item := range list.Content {
			name := yamledit.Name(item)
			if count, ok := edit.Replicas[name]; ok && field == "replicas" {
				yamledit.SetOrDelete(item, "count", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatInt(count, 10)})
			}
			if image, ok := edit.Images[name]; ok && field == "images" {
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
