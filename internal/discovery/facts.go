package discovery

import (
	"cmp"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
)

// scan is one discovery answer. failed lists the group/versions whose
// discovery failed; whatever the answer says about them is not trusted.
type scan struct {
	groups []*metav1.APIGroup
	lists  []*metav1.APIResourceList
	failed map[schema.GroupVersion]error
}

// resourceFacts are what discovery said about one top-level resource,
// before any verdict. Verdicts are computed when a snapshot is built so that
// they always reflect the current policy.
type resourceFacts struct {
	name       string
	kind       string
	namespaced bool
	verbs      []string // sorted
}

// groupVersionFacts are the last known resources of one group/version.
type groupVersionFacts struct {
	resources []resourceFacts
	// missingSince is when a scan first stopped listing the group/version;
	// zero while it is served.
	missingSince time.Time
}

// groupOrder is how the server ranks a group's versions.
type groupOrder struct {
	preferred string
	versions  []string // server priority order, most preferred first
}

// surfaceFacts accumulate scans into the known API surface. Only Refresh
// touches them, under Catalog.refreshMu.
type surfaceFacts struct {
	groupVersions map[schema.GroupVersion]*groupVersionFacts
	groups        map[string]groupOrder
}

// apply folds one scan into the known surface: served group/versions take
// the scan's facts, failed ones keep their last known facts untouched, and
// ones absent from the scan are removed only once they have been absent for
// at least grace (judged at the first scan after it elapsed).
func (f *surfaceFacts) apply(s scan, now time.Time, grace time.Duration) {
	if f.groupVersions == nil {
		f.groupVersions = map[schema.GroupVersion]*groupVersionFacts{}
		f.groups = map[string]groupOrder{}
	}
	for _, group := range s.groups {
		// A group whose every version failed is listed without versions
		// (aggregated discovery marks them stale); keep its last ranking.
		if group != nil && len(group.Versions) > 0 {
			f.groups[group.Name] = orderOf(group)
		}
	}
	served := map[schema.GroupVersion]bool{}
	for _, list := range s.lists {
		if list == nil {
			continue
		}
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue // not a group/version any rule could name
		}
		if _, failed := s.failed[gv]; failed {
			continue
		}
		served[gv] = true
		f.groupVersions[gv] = &groupVersionFacts{resources: resourcesOf(list)}
	}
	for gv, facts := range f.groupVersions {
		if _, failed := s.failed[gv]; served[gv] || failed {
			continue
		}
		if facts.missingSince.IsZero() {
			facts.missingSince = now
			continue
		}
		if now.Sub(facts.missingSince) >= grace {
			delete(f.groupVersions, gv)
		}
	}
	f.forgetEmptyGroups()
}

// forgetEmptyGroups drops the version ranking of groups with no known
// group/version left; a group that comes back is ranked by its new listing.
func (f *surfaceFacts) forgetEmptyGroups() {
	known := map[string]bool{}
	for gv := range f.groupVersions {
		known[gv.Group] = true
	}
	for group := range f.groups {
		if !known[group] {
			delete(f.groups, group)
		}
	}
}

func orderOf(group *metav1.APIGroup) groupOrder {
	order := groupOrder{preferred: group.PreferredVersion.Version}
	for _, v := range group.Versions {
		order.versions = append(order.versions, v.Version)
	}
	return order
}

// resourcesOf extracts the top-level resources of a list; subresources
// ("pods/status") are facets of their parent, never types of their own.
func resourcesOf(list *metav1.APIResourceList) []resourceFacts {
	var out []resourceFacts
	for _, r := range list.APIResources {
		if r.Name == "" || strings.Contains(r.Name, "/") {
			continue
		}
		verbs := slices.Clone([]string(r.Verbs))
		slices.Sort(verbs)
		out = append(out, resourceFacts{name: r.Name, kind: r.Kind, namespaced: r.Namespaced, verbs: slices.Compact(verbs)})
	}
	return out
}

// types builds the sorted type list with verdicts under policy.
func (f *surfaceFacts) types(policy Policy) []TypeInfo {
	var out []TypeInfo
	versionsOf := map[schema.GroupResource][]string{}
	for gv, facts := range f.groupVersions {
		for _, r := range facts.resources {
			gr := schema.GroupResource{Group: gv.Group, Resource: r.name}
			followable, reason := Followability(gr, r.verbs)
			out = append(out, TypeInfo{
				GVR:        gv.WithResource(r.name),
				Kind:       r.kind,
				Namespaced: r.namespaced,
				Verbs:      slices.Clone(r.verbs),
				Followable: followable,
				Reason:     reason,
				Sensitive:  policy.IsSensitive(gr),
			})
			versionsOf[gr] = append(versionsOf[gr], gv.Version)
		}
	}
	for i := range out {
		gr := out[i].GVR.GroupResource()
		out[i].Preferred = f.groups[gr.Group].choose(versionsOf[gr]) == out[i].GVR.Version
	}
	slices.SortFunc(out, func(a, b TypeInfo) int {
		return cmp.Or(
			cmp.Compare(a.GVR.Group, b.GVR.Group),
			cmp.Compare(a.GVR.Version, b.GVR.Version),
			cmp.Compare(a.GVR.Resource, b.GVR.Resource))
	})
	return out
}

// choose picks the preferred version among those serving one resource: the
// group's preferred version, else the first in the server's ranking, else
// (for a group no longer listed, or versions it no longer lists) the highest
// by Kubernetes version ordering (v2 > v1 > v1beta2 > v1alpha1).
func (o groupOrder) choose(versions []string) string {
	if slices.Contains(versions, o.preferred) {
		return o.preferred
	}
	for _, v := range o.versions {
		if slices.Contains(versions, v) {
			return v
		}
	}
	best := ""
	for _, v := range versions {
		if best == "" || version.CompareKubeAwareVersionStrings(v, best) > 0 {
			best = v
		}
	}
	return best
}
