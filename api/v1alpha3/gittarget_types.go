package v1alpha3

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// The required fields are required by CEL rules, not by the schema: the API
// server skips every CEL rule of an object that misses a schema-required
// field and adds a confusing "<nil>: Invalid value: null: some validation
// rules were not checked" to the refusal.
// +kubebuilder:validation:XValidation:rule="has(self.providerRef)",message="providerRef is required: it names the GitProvider, in this namespace, to write through",fieldPath=".providerRef"
// +kubebuilder:validation:XValidation:rule="has(self.branch)",message="branch is required: the Git branch to write",fieldPath=".branch"
// +kubebuilder:validation:XValidation:rule="has(self.path)",message="path is required: the subtree this target owns, relative to the repository root ('.' for the root)",fieldPath=".path"
// +kubebuilder:validation:XValidation:rule="!has(self.push) || !has(self.push.pullRequest) || !has(self.push.pullRequest.headBranch) || !has(self.branch) || self.push.pullRequest.headBranch != self.branch",message="headBranch must differ from branch: the pull request merges the head branch into branch",fieldPath=".push.pullRequest.headBranch"
// Spec-level, so a push added to a target created without one is held to
// them too.
// +kubebuilder:validation:XValidation:rule="(has(self.push) && has(self.push.mode) ? self.push.mode : 'Direct') == (has(oldSelf.push) && has(oldSelf.push.mode) ? oldSelf.push.mode : 'Direct')",message="push.mode is immutable: the mode is part of the destination; delete the GitTarget and create it again",fieldPath=".push.mode"
// +kubebuilder:validation:XValidation:rule="(has(self.push) && has(self.push.pullRequest) && has(self.push.pullRequest.headBranch) ? self.push.pullRequest.headBranch : '') == (has(oldSelf.push) && has(oldSelf.push.pullRequest) && has(oldSelf.push.pullRequest.headBranch) ? oldSelf.push.pullRequest.headBranch : '')",message="push.pullRequest.headBranch is immutable: the head branch is part of the destination; delete the GitTarget and create it again",fieldPath=".push.pullRequest.headBranch"

// GitTargetSpec joins one source cluster to one Git destination:
// (clusterProvider, provider, branch, path). The destination and the source
// are immutable, so a target never silently orphans what it wrote.
type GitTargetSpec struct {
	// ProviderRef names the GitProvider, in this namespace, to write through.
	// Required.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="providerRef is immutable"
	ProviderRef GitProviderReference `json:"providerRef"`

	// ClusterProviderRef names the cluster-scoped ClusterProvider to read
	// from.
	// +optional
	// +kubebuilder:default={name: "default"}
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="clusterProviderRef is immutable"
	ClusterProviderRef *ClusterProviderReference `json:"clusterProviderRef,omitempty"`

	// Branch to write, a name `git check-ref-format --branch` accepts
	// (main, release/1.2; not HEAD or refs/heads/main); it must match the
	// GitProvider's allowedBranches. Required.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9_][A-Za-z0-9._/-]*$')",message="branch may use only letters, digits, '.', '_', '/' and '-', and starts with a letter, digit or '_'"
	// +kubebuilder:validation:XValidation:rule="!self.contains('..') && !self.contains('//') && !self.endsWith('/') && !self.endsWith('.') && !self.endsWith('.lock')",message="branch must be a valid Git branch name (no '..', '//', or trailing '/', '.', '.lock')"
	// +kubebuilder:validation:XValidation:rule="!self.split('/').exists(c, c.startsWith('.') || c.endsWith('.lock'))",message="no part of branch between '/' may start with '.' or end with '.lock': Git refuses such branch names"
	// +kubebuilder:validation:XValidation:rule="self != 'HEAD'",message="branch must not be HEAD: Git reserves that name for the checked-out commit"
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('refs/')",message="branch is a branch name, not a ref: write main, not refs/heads/main"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="branch is immutable"
	Branch string `json:"branch"`

	// Path of the subtree this target owns, relative to the repository root.
	// "." is the root and must be chosen explicitly. Segments may not start
	// with '.', so a path can never reach .git or escape the repository,
	// nor be longer than 255 characters, so every checkout can create it.
	// Required.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9._@+/-]+$')",message="path may use only letters, digits, '.', '_', '@', '+', '-' and '/'"
	// +kubebuilder:validation:XValidation:rule="self == '.' || !(self.startsWith('/') || self.endsWith('/') || self.contains('//'))",message="path is relative to the repository root: no leading or trailing '/' and no empty segment"
	// +kubebuilder:validation:XValidation:rule="self == '.' || !self.split('/').exists(s, s.startsWith('.'))",message="no path segment may start with '.': '..' would leave the repository and .git is Git's own; the repository root is '.' alone"
	// +kubebuilder:validation:XValidation:rule="!self.split('/').exists(s, s.size() > 255)",message="no path segment may be longer than 255 characters, the most a file system allows in one file or directory name"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="path is immutable"
	Path string `json:"path"`

	// AllowedSourceNamespaces bounds which source namespaces rules may mirror
	// into this target. Omitted, only the target's own namespace is admitted.
	// +optional
	AllowedSourceNamespaces *NamespacePolicy `json:"allowedSourceNamespaces,omitempty"`

	// Encryption configures SOPS/age encryption of sensitive resources.
	// Without it, sensitive resources are never written.
	// +optional
	Encryption *EncryptionSpec `json:"encryption,omitempty"`

	// Placement declares where new files go, when the canonical layout
	// {path}/{namespace}/{group}/{resource}/{name}.yaml is not wanted.
	// +optional
	Placement *PlacementSpec `json:"placement,omitempty"`

	// Suspend stops writing to Git while true: the target's streams keep
	// watching the cluster, but nothing is committed for it and Ready says
	// Suspended. Set back to false, the target replays its streams and one
	// commit brings its path to the cluster's state.
	// +optional
	// +kubebuilder:default=false
	Suspend bool `json:"suspend,omitempty"`

	// Push says how the target's commits reach spec.branch: Direct (the
	// default) commits to it; PullRequest commits to a head branch and
	// keeps one pull request from it into spec.branch open, for a
	// protected branch. Its mode and head branch are part of the
	// destination, so immutable; the title and body may change. (The
	// GitProvider's spec.push tunes commit batching, for every branch.)
	// +optional
	// +kubebuilder:default={mode: Direct}
	Push *TargetPush `json:"push,omitempty"`
}

// PushMode is how a GitTarget's commits reach its branch.
// +kubebuilder:validation:Enum=Direct;PullRequest
type PushMode string

const (
	// PushDirect commits to spec.branch.
	PushDirect PushMode = "Direct"
	// PushPullRequest commits to a head branch and keeps one pull request
	// from it into spec.branch (docs/pull-request-mode.md).
	PushPullRequest PushMode = "PullRequest"
)

// TargetPush is GitTarget spec.push.
// +kubebuilder:validation:XValidation:rule="!has(self.pullRequest) || self.mode == 'PullRequest'",message="pullRequest is only for mode PullRequest: set mode: PullRequest, or remove pullRequest",fieldPath=".pullRequest"
type TargetPush struct {
	// Mode is Direct (commit to spec.branch) or PullRequest (commit to a
	// head branch and keep a pull request into spec.branch open).
	// +optional
	// +kubebuilder:default=Direct
	Mode PushMode `json:"mode,omitempty"`

	// PullRequest tunes mode PullRequest; omitted, its defaults hold.
	// +optional
	PullRequest *PullRequestSpec `json:"pullRequest,omitempty"`
}

// PullRequestSpec is GitTarget spec.push.pullRequest.
type PullRequestSpec struct {
	// HeadBranch is the branch the operator commits to and opens the pull
	// request from; default gitops-reverser/<GitTarget name>. It follows
	// the rules of spec.branch, must differ from it, and must match the
	// GitProvider's allowedBranches (spec.branch need not: nothing is
	// written to it).
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9_][A-Za-z0-9._/-]*$')",message="headBranch may use only letters, digits, '.', '_', '/' and '-', and starts with a letter, digit or '_'"
	// +kubebuilder:validation:XValidation:rule="!self.contains('..') && !self.contains('//') && !self.endsWith('/') && !self.endsWith('.') && !self.endsWith('.lock')",message="headBranch must be a valid Git branch name (no '..', '//', or trailing '/', '.', '.lock')"
	// +kubebuilder:validation:XValidation:rule="!self.split('/').exists(c, c.startsWith('.') || c.endsWith('.lock'))",message="no part of headBranch between '/' may start with '.' or end with '.lock': Git refuses such branch names"
	// +kubebuilder:validation:XValidation:rule="self != 'HEAD'",message="headBranch must not be HEAD: Git reserves that name for the checked-out commit"
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('refs/')",message="headBranch is a branch name, not a ref: write gitops-reverser/x, not refs/heads/gitops-reverser/x"
	HeadBranch string `json:"headBranch,omitempty"`

	// Title is the pull request's title, a Go text/template; omitted, the
	// operator's default. docs/pull-request-mode.md lists its fields.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Title string `json:"title,omitempty"`

	// Body is the pull request's body, a Go text/template; omitted, the
	// operator's default. The operator appends a summary of the changes.
	// +optional
	// +kubebuilder:validation:MaxLength=16384
	Body string `json:"body,omitempty"`
}

// DefaultHeadBranchPrefix starts the head branch a GitTarget in mode
// PullRequest writes when spec.push.pullRequest.headBranch is omitted:
// gitops-reverser/<GitTarget name>.
const DefaultHeadBranchPrefix = "gitops-reverser/"

// PullRequestMode is true when the target commits to a head branch and
// keeps a pull request into spec.branch.
func (s GitTargetSpec) PullRequestMode() bool {
	return s.Push != nil && s.Push.Mode == PushPullRequest
}

// HeadBranch is the branch a target in mode PullRequest commits to:
// spec.push.pullRequest.headBranch, else gitops-reverser/<name>. In
// direct mode it is spec.branch.
func (t *GitTarget) HeadBranch() string {
	if !t.Spec.PullRequestMode() {
		return t.Spec.Branch
	}
	if pr := t.Spec.Push.PullRequest; pr != nil && pr.HeadBranch != "" {
		return pr.HeadBranch
	}
	return DefaultHeadBranchPrefix + t.Name
}

// DefaultClusterProvider is the ClusterProvider a GitTarget reads from when
// spec.clusterProviderRef is omitted.
const DefaultClusterProvider = "default"

// ClusterProviderName is the referenced ClusterProvider, "default" when the
// reference is omitted.
func (s GitTargetSpec) ClusterProviderName() string {
	if s.ClusterProviderRef == nil || s.ClusterProviderRef.Name == "" {
		return DefaultClusterProvider
	}
	return s.ClusterProviderRef.Name
}

// GitProviderReference names a GitProvider in the referrer's namespace.
// +kubebuilder:validation:XValidation:rule="has(self.name)",message="name is required: the name of a GitProvider in this namespace",fieldPath=".name"
type GitProviderReference struct {
	// Group of the referent; only configbutler.ai.
	// +optional
	// +kubebuilder:default=configbutler.ai
	// +kubebuilder:validation:Enum=configbutler.ai
	Group string `json:"group,omitempty"`

	// Kind of the referent; only GitProvider.
	// +optional
	// +kubebuilder:default=GitProvider
	// +kubebuilder:validation:Enum=GitProvider
	Kind string `json:"kind,omitempty"`

	// Name of the GitProvider. Required.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$')",message="must be a Kubernetes object name: lower-case letters, digits, '-' and '.', starting and ending with a letter or digit"
	Name string `json:"name"`
}

// ClusterProviderReference names a ClusterProvider.
// +kubebuilder:validation:XValidation:rule="has(self.name)",message="name is required: the name of a ClusterProvider",fieldPath=".name"
type ClusterProviderReference struct {
	// Name of the ClusterProvider.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$')",message="must be a Kubernetes object name: lower-case letters, digits, '-' and '.', starting and ending with a letter or digit"
	// +optional
	Name string `json:"name"`
}

// EncryptionSpec configures encryption of sensitive resources.
// +kubebuilder:validation:XValidation:rule="has(self.age)",message="age is required: the age recipients, a secretRef, or both",fieldPath=".age"
type EncryptionSpec struct {
	// Provider of encryption; SOPS is the only one.
	// +optional
	// +kubebuilder:default=sops
	// +kubebuilder:validation:Enum=sops
	Provider string `json:"provider,omitempty"`

	// Age sets the age recipients SOPS encrypts to.
	// +optional
	Age AgeEncryption `json:"age"`
}

// AgeEncryption names age recipients directly or through a Secret holding
// age identities.
// +kubebuilder:validation:XValidation:rule="(has(self.recipients) && size(self.recipients) > 0) || has(self.secretRef)",message="set recipients, secretRef, or both"
// +kubebuilder:validation:XValidation:rule="!has(self.generateWhenMissing) || !self.generateWhenMissing || has(self.secretRef)",message="generateWhenMissing needs secretRef to store the key in",fieldPath=".generateWhenMissing"
type AgeEncryption struct {
	// Recipients are age public keys (age1...).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=62
	// +kubebuilder:validation:items:XValidation:rule="self.matches('^age1[02-9ac-hj-np-z]{58}$')",message="must be an age public key: age1 followed by 58 lower-case bech32 characters, as age-keygen prints it"
	Recipients []string `json:"recipients,omitempty"`

	// SecretRef names a Secret in this namespace whose *.agekey values are age
	// identities; their recipients are added.
	// +optional
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`

	// GenerateWhenMissing generates an age identity into the Secret when it
	// holds none.
	// +optional
	GenerateWhenMissing bool `json:"generateWhenMissing,omitempty"`
}

// PlacementSpec declares path templates for new objects: an object with no
// document in the target yet goes to its type's template, else Default,
// else the canonical path. Existing documents never move. Templates use
// {namespace}, {group}, {version}, {resource}, {kind} and {name}, and are
// relative to spec.path.
type PlacementSpec struct {
	// ByType maps an exact [group/]version/resource ("v1/configmaps",
	// "apps/v1/deployments") to a template.
	// +optional
	// +kubebuilder:validation:MaxProperties=128
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 317 && k.matches('^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[a-z0-9]([-a-z0-9]*[a-z0-9])?/[a-z0-9]([-a-z0-9]*[a-z0-9])?$'))",message="byType keys are [group/]version/resource, e.g. v1/configmaps or apps/v1/deployments"
	ByType map[string]PathTemplate `json:"byType,omitempty"`

	// Default template for types ByType does not name.
	// +optional
	Default PathTemplate `json:"default,omitempty"`
}

// PathTemplate is a relative file path with brace variables, ending in
// .yaml or .yml. Only the six variables are known; a brace is never
// literal. What a template renders for an object is checked when the
// object is placed (see docs/crds/gittarget.md).
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=512
// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9_{@+-][A-Za-z0-9._{}@+-]*(/[A-Za-z0-9_{@+-][A-Za-z0-9._{}@+-]*)*[.]ya?ml$')",message="a template is a relative path ending in .yaml or .yml, of letters, digits, '.', '_', '@', '+', '-' and variables, whose segments do not start with '.' and are not empty"
// +kubebuilder:validation:XValidation:rule="self.matches('^([^{}]|[{](namespace|group|version|resource|kind|name)[}])*$')",message="a template uses only the variables {namespace}, {group}, {version}, {resource}, {kind} and {name}, each in one pair of braces"
type PathTemplate string

// ResyncRequestedAtAnnotation asks for a full resync of a GitTarget, as
// Flux's reconcile.fluxcd.io/requestedAt does: any new value drops the
// target's resume cursors and restarts its streams with a replay and a
// mark-and-sweep, after which Git matches the cluster again. The value is
// opaque (a timestamp, by convention); status.lastHandledResyncAt shows
// the last one handled.
const ResyncRequestedAtAnnotation = "configbutler.ai/resync-requested-at"

// GitTargetStatus reports the target's health, streams and last commit.
type GitTargetStatus struct {
	CommonStatus `json:",inline"`

	// Streams counts the target's source watches.
	// +optional
	Streams *StreamsSummary `json:"streams,omitempty"`

	// LastCommit is the last commit the operator made for this target.
	// +optional
	LastCommit *CommitReference `json:"lastCommit,omitempty"`

	// Refused summarises the objects the rules select that the operator
	// does not write (a Secret without encryption, a ConfigMap whose file
	// name is reserved, ...); the ObjectsWritten condition says why.
	// +optional
	Refused *RefusedSummary `json:"refused,omitempty"`

	// PullRequest is where the pull request of a target in mode
	// PullRequest stands.
	// +optional
	PullRequest *PullRequestStatus `json:"pullRequest,omitempty"`

	// LastHandledResyncAt is the last value of the annotation
	// configbutler.ai/resync-requested-at that the operator acted on: the
	// target's streams were restarted with a replay for it.
	// +optional
	LastHandledResyncAt string `json:"lastHandledResyncAt,omitempty"`
}

// RefusedSummary is a bounded summary of the refused objects: their count
// and the first few, sorted by reason, then object.
type RefusedSummary struct {
	// Count of objects not written.
	Count int32 `json:"count"`
	// Objects are the first refused objects (at most 10).
	// +optional
	// +kubebuilder:validation:MaxItems=10
	Objects []RefusedObject `json:"objects,omitempty"`
}

// RefusedObject names one object that is not written, and why.
type RefusedObject struct {
	// APIVersion of the object.
	APIVersion string `json:"apiVersion"`
	// Kind of the object.
	Kind string `json:"kind"`
	// Namespace of the object; empty for a cluster-scoped one.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Name of the object.
	Name string `json:"name"`
	// Reason it is not written; docs/troubleshooting.md explains each.
	Reason string `json:"reason"`
}

// PullRequestStatus is where a target's pull request stands.
type PullRequestStatus struct {
	// HeadBranch the operator commits to.
	HeadBranch string `json:"headBranch"`
	// BaseBranch the pull request merges into: spec.branch.
	BaseBranch string `json:"baseBranch"`
	// Number of the open (or last) pull request; omitted when none is
	// open yet, or the forge has no pull requests.
	// +optional
	Number int64 `json:"number,omitempty"`
	// URL of the pull request in the forge's web UI.
	// +optional
	URL string `json:"url,omitempty"`
	// State of the pull request: open, merged or closed.
	// +optional
	State string `json:"state,omitempty"`
	// LastAction says what the operator last did to the pull request, in
	// words (opened, updated, the base merged in, the head rebuilt).
	// +optional
	LastAction string `json:"lastAction,omitempty"`
}

// StreamsSummary is a bounded count of a target's watches, not a per-type
// list.
type StreamsSummary struct {
	// Total watches the target claims.
	Total int32 `json:"total"`
	// Running watches past their initial replay.
	Running int32 `json:"running"`
	// Replaying watches still in their initial replay.
	Replaying int32 `json:"replaying"`
	// Failing watches that are reconnecting.
	Failing int32 `json:"failing"`
}

// CommitReference identifies a commit on the remote.
type CommitReference struct {
	// SHA of the commit.
	SHA string `json:"sha"`
	// ShortSHA is the SHA's first seven characters, as git log --oneline
	// shows it (kubectl get gittarget prints it).
	// +optional
	ShortSHA string `json:"shortSHA,omitempty"`
	// URL of the commit in the forge's web UI, when it has one.
	// +optional
	URL string `json:"url,omitempty"`
	// Time the commit was pushed.
	// +optional
	Time *metav1.Time `json:"time,omitempty"`
}

// GitTarget is one materialization of source-cluster objects into a Git
// branch and path.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=gt,categories=gitops
// +kubebuilder:printcolumn:name="Branch",type=string,JSONPath=`.spec.branch`
// +kubebuilder:printcolumn:name="Path",type=string,JSONPath=`.spec.path`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Last Commit",type=string,JSONPath=`.status.lastCommit.shortSHA`
// +kubebuilder:printcolumn:name="Committed",type=date,JSONPath=`.status.lastCommit.time`
// +kubebuilder:printcolumn:name="Pull Request",type=string,JSONPath=`.status.pullRequest.url`,priority=1
// +kubebuilder:printcolumn:name="Suspended",type=boolean,JSONPath=`.spec.suspend`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
type GitTarget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   GitTargetSpec   `json:"spec"`
	Status GitTargetStatus `json:"status,omitempty"`
}

// GitTargetList is a list of GitTargets.
//
// +kubebuilder:object:root=true
type GitTargetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GitTarget `json:"items"`
}

func init() {
	SchemeBuilder.Register(&GitTarget{}, &GitTargetList{})
}
