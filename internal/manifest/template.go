package manifest

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// Placement is a GitTarget's declared placement policy (spec.placement) as
// plain data. The zero value declares nothing: every new object goes to its
// canonical path.
type Placement struct {
	// ByType maps an exact "[group/]version/resource" ("v1/configmaps",
	// "apps/v1/deployments") to a path template.
	ByType map[string]string
	// Default is the template for types ByType does not name; "" means the
	// canonical path.
	Default string
}

// TypeKey is the ByType key of id's type: "[group/]version/resource".
func TypeKey(id ObjectID) string {
	if id.Group == "" {
		return id.Version + "/" + id.Resource
	}
	return id.Group + "/" + id.Version + "/" + id.Resource
}

// template is the template declared for id's type, if any.
func (p Placement) template(id ObjectID) (string, bool) {
	if t, ok := p.ByType[TypeKey(id)]; ok && t != "" {
		return t, true
	}
	return p.Default, p.Default != ""
}

// Errors of RenderPath, for the planner to choose a refusal reason.
var (
	// errIncomplete: a variable the template uses has no value for the
	// object (only {group} may be empty).
	errIncomplete = errors.New("incomplete identity")
	// errUnsafePath: the template is malformed or renders a path the
	// operator will not write.
	errUnsafePath = errors.New("unsafe placement")
)

// RenderPath renders a placement template for id under root. The brace
// language is deliberately tiny (no text/template, whose reflection costs
// binary size): literal text, and variables written {name} from this list:
//
//	{namespace}  the namespace; _cluster for a cluster-scoped object
//	{group}      the API group; empty for the core group
//	{version}    the API version the object was read at (v1, v1beta1)
//	{resource}   the plural resource (configmaps)
//	{kind}       the kind (ConfigMap)
//	{name}       the object's name
//
// There is no escape for a literal brace. A path segment that renders
// empty (only {group} can, for core) is dropped, so
// "{namespace}/{group}/{resource}/{name}.yaml" is the canonical layout and
// never contains "//". Each value must be one plain segment: a value holding
// '/' or '\' is refused rather than allowed to add directories.
//
// The rendered path must stay below root: no segment ".", ".." or starting
// with '.' (that covers .git and the auxiliary dot files), and the file
// ends in .yaml or .yml. A sensitive object's file always ends .sops.yaml
// (its .yaml/.yml, and any .sops before it, are replaced), and a plaintext
// object is never placed in a .sops.yaml file, which tooling takes for
// ciphertext.
//
// A segment longer than MaxSegmentBytes is shortened by FitSegment (the
// file's suffix is kept), and a path longer than MaxPathBytes is refused.
func RenderPath(root, template string, id ObjectID, sensitive bool) (string, error) {
	rendered, err := expand(template, id)
	if err != nil {
		return "", fmt.Errorf("render placement %q for %s: %w", template, id, err)
	}
	var segments []string
	for _, segment := range strings.Split(rendered, "/") {
		if segment == "" {
			continue
		}
		if err := checkRenderedSegment(segment); err != nil {
			return "", fmt.Errorf("render placement %q for %s: %q: %w", template, id, rendered, err)
		}
		segments = append(segments, segment)
	}
	if len(segments) == 0 {
		return "", fmt.Errorf("render placement %q for %s: %w: renders no path", template, id, errUnsafePath)
	}
	last := len(segments) - 1
	stem, suffix, err := fileName(segments[last], sensitive)
	if err != nil {
		return "", fmt.Errorf("render placement %q for %s: %q: %w", template, id, rendered, err)
	}
	for i, segment := range segments[:last] {
		segments[i] = FitSegment(segment, "")
	}
	segments[last] = FitSegment(stem, suffix)
	placed := path.Join(append([]string{root}, segments...)...)
	if len(placed) > MaxPathBytes {
		return "", fmt.Errorf("render placement %q for %s: %w: the path is %d bytes, more than %d",
			template, id, errUnsafePath, len(placed), MaxPathBytes)
	}
	return placed, nil
}

// expand substitutes the variables of template.
func expand(template string, id ObjectID) (string, error) {
	var out strings.Builder
	for rest := template; rest != ""; {
		open := strings.IndexAny(rest, "{}")
		if open < 0 {
			out.WriteString(rest)
			break
		}
		if rest[open] == '}' {
			return "", fmt.Errorf("%w: '}' without '{'", errUnsafePath)
		}
		out.WriteString(rest[:open])
		end := strings.IndexAny(rest[open+1:], "{}")
		if end < 0 || rest[open+1+end] != '}' {
			return "", fmt.Errorf("%w: '{' without '}'", errUnsafePath)
		}
		value, err := variable(rest[open+1:open+1+end], id)
		if err != nil {
			return "", err
		}
		out.WriteString(value)
		rest = rest[open+end+2:]
	}
	return out.String(), nil
}

// variable is the value of one template variable for id.
func variable(name string, id ObjectID) (string, error) {
	var value string
	switch name {
	case "namespace":
		value = id.Namespace
		if value == "" {
			value = ClusterScopeDir
		}
	case "group":
		if strings.ContainsAny(id.Group, "/\\") {
			return "", fmt.Errorf("%w: {group} %q contains a path separator", errUnsafePath, id.Group)
		}
		return id.Group, nil // empty for core: its segment is dropped
	case "version":
		value = id.Version
	case "resource":
		value = id.Resource
	case "kind":
		value = id.Kind
	case "name":
		value = id.Name
	default:
		return "", fmt.Errorf("%w: unknown variable {%s}", errUnsafePath, name)
	}
	switch {
	case value == "":
		return "", fmt.Errorf("%w: {%s} is empty", errIncomplete, name)
	case strings.ContainsAny(value, "/\\"):
		return "", fmt.Errorf("%w: {%s} %q contains a path separator", errUnsafePath, name, value)
	}
	return value, nil
}

// checkRenderedSegment refuses a segment that would leave the root, reach
// .git or a dot file, or that Git or a checkout cannot hold.
func checkRenderedSegment(segment string) error {
	switch {
	case strings.HasPrefix(segment, "."):
		return fmt.Errorf("%w: segment %q starts with a dot", errUnsafePath, segment)
	case strings.ContainsFunc(segment, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '\\' }):
		return fmt.Errorf("%w: segment %q holds a control character or backslash", errUnsafePath, segment)
	}
	return nil
}

// fileName splits the last segment into its stem and suffix: .sops.yaml
// for a sensitive object whatever the template says, and .yaml/.yml (but
// not .sops.yaml) for a plaintext one.
func fileName(segment string, sensitive bool) (stem, suffix string, err error) {
	suffix = plainSuffix
	stem, ok := strings.CutSuffix(segment, suffix)
	if !ok {
		suffix = ".yml"
		stem, ok = strings.CutSuffix(segment, suffix)
	}
	if !ok {
		return "", "", fmt.Errorf("%w: the file name %q does not end in .yaml or .yml", errUnsafePath, segment)
	}
	plainStem, hadSops := strings.CutSuffix(stem, ".sops")
	switch {
	case plainStem == "":
		return "", "", fmt.Errorf("%w: the file name %q has nothing before its suffix", errUnsafePath, segment)
	case sensitive:
		return plainStem, sensitiveSuffix, nil
	case hadSops:
		return "", "", fmt.Errorf("%w: a plaintext object is never placed in a .sops file (%q)", errUnsafePath, segment)
	}
	return stem, suffix, nil
}
