// Package v1alpha3 holds the GitOps Reverser API: which cluster objects are
// mirrored (WatchRule, ClusterWatchRule), where they are written
// (GitTarget, GitProvider), where they are read from (ClusterProvider), and
// the one-shot "save now" signal (CommitRequest).
//
// +kubebuilder:object:generate=true
// +groupName=configbutler.ai
package v1alpha3

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "configbutler.ai", Version: "v1alpha3"}

	// SchemeBuilder registers the kinds of this package with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the kinds of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
