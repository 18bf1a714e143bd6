package kustomization

import (
	"fmt"
	"path"
	"slices"
	"strings"

	kustomize "sigs.k8s.io/kustomize/api/types"
)

// names are the file names kustomize reads as a directory's
// kustomization, in the order it tries them.
var names = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// IsPath reports whether p is a file kustomize reads as a
// kustomization.
func IsPath(p string) bool {
	return slices.Contains(names, path.Base(p))
}

// inDir is the kustomization of directory dir, if it has one.
func inDir(kustomizations map[string]*File, dir string) (string, bool) {
	for _, name := range names {
		if _, ok := kustomizations[path.Join(dir, name)]; ok {
			return path.Join(dir, name), true
		}
	}
	return "", false
}

// File is a kustomization as the index read it, once, when the
// file was added.
type File struct {
	Parsed   *kustomize.Kustomization // nil when the types cannot read it
	Features []string                 // what the gate refuses, one entry per feature
}

// Read reads a kustomization with the kustomize API types and lists each
// feature the operator refuses in it; a file the types cannot read is one
// such feature.
func Read(content []byte) *File {
	var k kustomize.Kustomization
	if err := k.Unmarshal(content); err != nil {
		return &File{Features: []string{fmt.Sprintf("not a kustomization the operator can read: %v", err)}}
	}
	return &File{Parsed: &k, Features: unsupportedFeatures(k)}
}

// unsupportedFeatures names what a kustomization uses that the operator
// refuses, one entry per feature.
func unsupportedFeatures(k kustomize.Kustomization) []string {
	var features []string
	add := func(used bool, feature string) {
		if used {
			features = append(features, feature)
		}
	}
	for _, problem := range k.EnforceFields() {
		features = append(features, "malformed: "+problem)
	}
	add(k.Kind == kustomize.ComponentKind, "a component (kind: Component)")
	add(len(k.ConfigMapGenerator) > 0, "generators (configMapGenerator)")
	add(len(k.SecretGenerator) > 0, "generators (secretGenerator)")
	add(len(k.Generators) > 0, "generators (generators)")
	add(len(k.HelmCharts) > 0 || len(k.HelmChartInflationGenerator) > 0 || k.HelmGlobals != nil, "helm charts (helmCharts)")
	add(len(k.Components) > 0, "components (components)")
	add(len(k.Replacements) > 0, "replacements (replacements)")
	add(len(k.Vars) > 0, "replacements (vars)")
	add(len(k.Transformers) > 0, "transformers (transformers)")
	add(len(k.Validators) > 0, "transformers (validators)")
	add(len(k.Configurations) > 0, "transformers (configurations)")
	add(k.NamePrefix != "", "name prefix (namePrefix)")
	add(k.NameSuffix != "", "name suffix (nameSuffix)")
	add(len(k.PatchesJson6902) > 0, "JSON6902 patches (patchesJson6902)")
	for _, p := range k.Patches {
		switch {
		case p.Patch != "":
			features = append(features, "inline patches (patches: patch)")
		case p.Target != nil:
			features = append(features, fmt.Sprintf("JSON6902 or targeted patches (patches: path %s with a target)", p.Path))
		}
	}
	for _, p := range k.PatchesStrategicMerge {
		if isInlinePatch(string(p)) {
			features = append(features, "inline patches (patchesStrategicMerge)")
		}
	}
	for _, field := range []struct {
		name    string
		entries []string
	}{{"resources", k.Resources}, {"bases", k.Bases}, {"components", k.Components}, {"crds", k.Crds}} {
		for _, entry := range field.entries {
			if isRemote(entry) {
				features = append(features, fmt.Sprintf("remote bases (%s: %s)", field.name, entry))
			}
		}
	}
	features = append(features, malformedOverrides(k)...)
	return features
}

// malformedOverrides reports images: and replicas: entries a build would
// reject or apply to nothing, so their effect cannot be inverted.
func malformedOverrides(k kustomize.Kustomization) []string {
	var features []string
	for i, image := range append(k.Images, k.ImageTags...) {
		switch {
		case strings.TrimSpace(image.Name) == "":
			features = append(features, fmt.Sprintf("malformed images: entry %d has no name", i+1))
		case image.NewName == "" && image.NewTag == "" && image.Digest == "" && image.TagSuffix == "":
			features = append(features, fmt.Sprintf("malformed images: entry %q sets nothing", image.Name))
		case strings.ContainsAny(image.NewTag, ":@ ") || strings.ContainsAny(image.Digest, " ") ||
			strings.ContainsAny(image.NewName, " @"):
			features = append(features, fmt.Sprintf("malformed images: entry %q", image.Name))
		}
	}
	for i, replica := range k.Replicas {
		switch {
		case strings.TrimSpace(replica.Name) == "":
			features = append(features, fmt.Sprintf("malformed replicas: entry %d has no name", i+1))
		case replica.Count < 0:
			features = append(features, fmt.Sprintf("malformed replicas: entry %q has a negative count", replica.Name))
		}
	}
	return features
}

// isInlinePatch tells an inline strategic-merge patch from a file path, as
// kustomize does in effect: a path is one line naming a file.
func isInlinePatch(entry string) bool {
	return strings.ContainsAny(entry, "\n:{")
}

// isRemote reports a resource kustomize would fetch rather than read from
// the checkout: a URL, an scp-like Git address, a ref query, or a path on a
// forge host without a scheme (github.com/org/repo/path).
func isRemote(entry string) bool {
	if strings.Contains(entry, "://") || strings.HasPrefix(entry, "git@") || strings.Contains(entry, "?ref=") {
		return true
	}
	host, _, _ := strings.Cut(entry, "/")
	switch host {
	case "github.com", "gitlab.com", "bitbucket.org":
		return true
	}
	return false
}
