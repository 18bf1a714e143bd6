package kustomization

import (
	"strings"

	kustomize "sigs.k8s.io/kustomize/api/types"
)

// ImageName is an image reference without its tag or digest.
func ImageName(image string) string {
	name, _, _ := strings.Cut(image, "@")
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name = name[:i]
	}
	return name
}

// imageParts splits an image into name, tag and digest.
func imageParts(image string) (name, tag, digest string) {
	rest, digest, _ := strings.Cut(image, "@")
	name = ImageName(rest)
	tag = strings.TrimPrefix(rest[len(name):], ":")
	return name, tag, digest
}

// ApplyImage is what kustomize renders for source under entry.
func ApplyImage(entry kustomize.Image, source string) string {
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

// InvertImage changes only the fields entry declares so that it renders
// live from source; ok is false when that cannot be done.
func InvertImage(entry kustomize.Image, source, live string) (kustomize.Image, bool) {
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
	if ApplyImage(inverted, source) != live {
		return kustomize.Image{}, false
	}
	return inverted, true
}
