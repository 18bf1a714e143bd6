package rules

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/discovery"
)

const wildcard = "*"

// ruleScope is the scope of the types a rule kind may claim: a WatchRule
// claims namespaced types, a ClusterWatchRule cluster-scoped ones.
type ruleScope int

const (
	namespacedScope ruleScope = iota
	clusterScope
)

func (s ruleScope) admits(t discovery.TypeInfo) bool {
	return t.Namespaced == (s == namespacedScope)
}

// mismatch explains why t cannot be claimed by this rule kind.
func (s ruleScope) mismatch(t discovery.TypeInfo) string {
	if s == namespacedScope {
		return fmt.Sprintf("%s is cluster-scoped; use a ClusterWatchRule", describe(t))
	}
	return fmt.Sprintf("%s is namespaced; use a WatchRule", describe(t))
}

// typeIndex is the discovered types, indexed the two ways rules look them up.
type typeIndex struct {
	all        []discovery.TypeInfo
	byResource map[string][]discovery.TypeInfo
	byGroup    map[string][]discovery.TypeInfo
}

// newTypeIndex sorts the types first, so that everything derived from the
// index (claims and messages alike) is independent of the input order.
func newTypeIndex(types []discovery.TypeInfo) typeIndex {
	types = slices.Clone(types)
	slices.SortFunc(types, func(a, b discovery.TypeInfo) int {
		return cmp.Or(
			cmp.Compare(a.GVR.Group, b.GVR.Group),
			cmp.Compare(a.GVR.Version, b.GVR.Version),
			cmp.Compare(a.GVR.Resource, b.GVR.Resource))
	})
	idx := typeIndex{
		all:        types,
		byResource: map[string][]discovery.TypeInfo{},
		byGroup:    map[string][]discovery.TypeInfo{},
	}
	for _, t := range types {
		idx.byResource[t.GVR.Resource] = append(idx.byResource[t.GVR.Resource], t)
		idx.byGroup[t.GVR.Group] = append(idx.byGroup[t.GVR.Group], t)
	}
	return idx
}

// groupSelection is the groups a rule item looks in: every group, or the
// named ones that are served.
type groupSelection struct {
	all   bool
	names []string
}

func (g groupSelection) includes(t discovery.TypeInfo) bool {
	return g.all || slices.Contains(g.names, t.GVR.Group)
}

func (g groupSelection) describe() string {
	if g.all {
		return "any API group"
	}
	quoted := make([]string, len(g.names))
	for i, name := range g.names {
		quoted[i] = quoteGroup(name)
	}
	return "API group " + strings.Join(quoted, ", ")
}

// versionRequest is one version choice of a rule item: the preferred
// version, any version, or one named version.
type versionRequest struct {
	label string
	match func(discovery.TypeInfo) bool
	named bool
}

func versionRequests(apiVersions []string) []versionRequest {
	if len(apiVersions) == 0 {
		return []versionRequest{{label: "its preferred version", match: func(t discovery.TypeInfo) bool { return t.Preferred }}}
	}
	if slices.Contains(apiVersions, wildcard) {
		return []versionRequest{{label: "any version", match: func(discovery.TypeInfo) bool { return true }}}
	}
	var requests []versionRequest
	for _, version := range uniqueInOrder(apiVersions) {
		requests = append(requests, versionRequest{
			label: "version " + strconv.Quote(version),
			match: func(t discovery.TypeInfo) bool { return t.GVR.Version == version },
			named: true,
		})
	}
	return requests
}

// resolver resolves one rule item's resource selector.
type resolver struct {
	idx        typeIndex
	scope      ruleScope
	matched    []discovery.TypeInfo
	unresolved []string
}

// resolveSelector returns the types a selector claims for a rule kind, and
// what it names but cannot claim.
func resolveSelector(sel v1alpha3.ResourceSelector, idx typeIndex, scope ruleScope) ([]discovery.TypeInfo, []string) {
	r := &resolver{idx: idx, scope: scope}
	if len(sel.Resources) == 0 {
		// Admission requires at least one; a rule stored without any must
		// not be read as "everything".
		r.fail("names no resources")
		return nil, r.unresolved
	}
	groups, ok := r.selectGroups(sel.APIGroups)
	if !ok {
		return nil, r.unresolved
	}
	versions := versionRequests(sel.APIVersions)
	for _, resource := range uniqueInOrder(sel.Resources) {
		if resource == wildcard {
			r.resolveEveryResource(groups, versions)
		} else {
			r.resolveNamedResource(resource, groups, versions)
		}
	}
	return r.matched, r.unresolved
}

// selectGroups reports named groups the source does not serve; ok is false
// when no group is left to look in.
func (r *resolver) selectGroups(apiGroups []string) (groupSelection, bool) {
	if len(apiGroups) == 0 || slices.Contains(apiGroups, wildcard) {
		return groupSelection{all: true}, true
	}
	var served []string
	for _, group := range uniqueInOrder(apiGroups) {
		if len(r.idx.byGroup[group]) == 0 {
			r.fail("API group %s is not served", quoteGroup(group))
			continue
		}
		served = append(served, group)
	}
	return groupSelection{names: served}, len(served) > 0
}

// resolveNamedResource claims a named resource in every selected group that
// serves it usably; it is unresolved per version choice that no group
// satisfies.
func (r *resolver) resolveNamedResource(resource string, groups groupSelection, versions []versionRequest) {
	if strings.Contains(resource, "/") {
		r.fail("subresource %q cannot be mirrored; name the top-level resource", resource)
		return
	}
	candidates := filterTypes(r.idx.byResource[resource], groups.includes)
	if len(candidates) == 0 {
		hint := ""
		if strings.Contains(resource, ".") {
			hint = "; name the plural resource alone and put its group in apiGroups"
		}
		r.fail("resource %q is not served by %s%s", resource, groups.describe(), hint)
		return
	}
	for _, version := range versions {
		atVersion := filterTypes(candidates, version.match)
		if len(atVersion) == 0 {
			r.fail("resource %q is not served at %s (served as %s)", resource, version.label, servedAs(candidates))
			continue
		}
		usable := filterTypes(atVersion, r.usable)
		if len(usable) == 0 {
			for _, t := range atVersion {
				r.fail("%s", r.whyUnusable(t))
			}
			continue
		}
		r.matched = append(r.matched, usable...)
	}
}

// resolveEveryResource claims every usable type of the selected groups at
// each version choice; unusable types are skipped silently because "*" never
// promised them.
func (r *resolver) resolveEveryResource(groups groupSelection, versions []versionRequest) {
	var inGroups []discovery.TypeInfo
	if groups.all {
		inGroups = r.idx.all
	} else {
		for _, group := range groups.names {
			inGroups = append(inGroups, r.idx.byGroup[group]...)
		}
	}
	for _, version := range versions {
		atVersion := filterTypes(inGroups, version.match)
		if len(atVersion) == 0 && version.named {
			r.fail("%s is not served by %s", version.label, groups.describe())
			continue
		}
		r.matched = append(r.matched, filterTypes(atVersion, r.usable)...)
	}
}

func (r *resolver) usable(t discovery.TypeInfo) bool {
	return t.Followable && r.scope.admits(t)
}

func (r *resolver) whyUnusable(t discovery.TypeInfo) string {
	if !t.Followable {
		return fmt.Sprintf("%s is not followable: %s", describe(t), t.Reason)
	}
	return r.scope.mismatch(t)
}

func (r *resolver) fail(format string, args ...any) {
	r.unresolved = append(r.unresolved, fmt.Sprintf(format, args...))
}

func filterTypes(types []discovery.TypeInfo, keep func(discovery.TypeInfo) bool) []discovery.TypeInfo {
	var out []discovery.TypeInfo
	for _, t := range types {
		if keep(t) {
			out = append(out, t)
		}
	}
	return out
}

// servedAs lists where a resource is served, e.g. "apps/v1, example.com/v1".
func servedAs(types []discovery.TypeInfo) string {
	var gvs []string
	for _, t := range types {
		gvs = append(gvs, t.GVR.GroupVersion().String())
	}
	slices.Sort(gvs)
	return strings.Join(slices.Compact(gvs), ", ")
}

// describe names a type the way kubectl prints an apiVersion plus resource:
// "v1/configmaps", "apps/v1/deployments".
func describe(t discovery.TypeInfo) string {
	return strconv.Quote(t.GVR.GroupVersion().String() + "/" + t.GVR.Resource)
}

func quoteGroup(group string) string {
	if group == "" {
		return `"" (core)`
	}
	return strconv.Quote(group)
}

func uniqueInOrder(values []string) []string {
	var out []string
	for _, v := range values {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}
