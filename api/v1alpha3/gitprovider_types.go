package v1alpha3

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// ForgeType is the kind of Git hosting the operator writes through.
// +kubebuilder:validation:Enum=github;gitea;gitlab;git
type ForgeType string

const (
	// ForgeGitHub commits through the GitHub Git Data API.
	ForgeGitHub ForgeType = "github"
	// ForgeGitea commits through Gitea's contents API.
	ForgeGitea ForgeType = "gitea"
	// ForgeGitLab commits through GitLab's commits API.
	ForgeGitLab ForgeType = "gitlab"
	// ForgeGit pushes with the Git protocol (SSH, HTTPS or file).
	ForgeGit ForgeType = "git"
)

// CommitMode chooses how the actor and the operator appear on a commit.
// +kubebuilder:validation:Enum=Author;Verified
type CommitMode string

const (
	// CommitModeAuthor puts the actor in the author field and the operator in
	// the committer field, optionally SSH-signed by the operator.
	CommitModeAuthor CommitMode = "Author"
	// CommitModeVerified lets GitHub sign the commit as the App (the
	// "Verified" badge); the actor goes into commit trailers.
	CommitModeVerified CommitMode = "Verified"
)

// GitProviderSpec is a Git repository, the credentials to write it, and how
// commits are made.
// +kubebuilder:validation:XValidation:rule="!has(self.commit) || !has(self.commit.mode) || self.commit.mode != 'Verified' || (has(self.forge) && has(self.forge.type) && self.forge.type == 'github')",message="commit.mode Verified needs forge.type github",fieldPath=".commit.mode"
// +kubebuilder:validation:XValidation:rule="!has(self.commit) || !has(self.commit.mode) || self.commit.mode != 'Verified' || !has(self.commit.signing)",message="commit.signing cannot be used with commit.mode Verified: GitHub signs verified commits",fieldPath=".commit.signing"
// +kubebuilder:validation:XValidation:rule="has(self.url)",message="url is required: the repository to write, e.g. https://github.com/org/repo.git",fieldPath=".url"
// +kubebuilder:validation:XValidation:rule="has(self.allowedBranches)",message="allowedBranches is required: glob patterns of the branches GitTargets may write, e.g. main",fieldPath=".allowedBranches"
type GitProviderSpec struct {
	// URL of the repository: https://, http://, ssh://, file:// or scp-like
	// user@host:path. Immutable: a new URL is a new GitProvider. It carries
	// no password or token: those belong in the Secret spec.secretRef names
	// (checked on create only, so one stored before the check can still
	// have its status written).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="!self.matches('[[:space:]]') && self.matches('^((https?|ssh|file)://.+|[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:.+)$')",message="must be a repository URL: https://, http://, ssh:// or file://, or scp-like user@host:path, without spaces"
	// +kubebuilder:validation:XValidation:rule="oldSelf.hasValue() || !self.matches('^[A-Za-z][A-Za-z0-9+.-]*://[^/@:]*:[^/@]*@')",optionalOldSelf=true,message="url must not carry a password or token (https://user:TOKEN@host/...): it would show in kubectl get and in logs; put the credentials in the Secret named by spec.secretRef"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="url is immutable"
	// +optional
	URL string `json:"url"`

	// Forge selects the API the operator commits through. Omitted, it is
	// inferred from the URL: ssh:// and scp-like URLs use git.
	// +optional
	Forge *ForgeSpec `json:"forge,omitempty"`

	// SecretRef names a Secret in this namespace with the credentials: a
	// GitHub App (appID, installationID, privateKey), a token, username and
	// password, or an SSH key (identity, known_hosts). Flux and Argo CD key
	// names are read as well.
	// +optional
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`

	// KnownHostsRef names the known_hosts used to verify an SSH server, when
	// the credentials Secret does not carry them.
	// +optional
	KnownHostsRef *KnownHostsReference `json:"knownHostsRef,omitempty"`

	// AllowedBranches are glob patterns (path.Match syntax: '*', '?',
	// '[a-z]', '[^x]') of the branches GitTargets may write. Outside the glob
	// characters they follow Git's branch name rules, as spec.branch does.
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=255
	// +kubebuilder:validation:items:XValidation:rule="self.matches('^[]A-Za-z0-9._/*?[^-]+$') && !self.startsWith('-')",message="allowedBranches entries may use only letters, digits, '.', '_', '/', '-' (not first) and the glob characters '*', '?', '[', ']' and '^'"
	// +kubebuilder:validation:items:XValidation:rule="!self.contains('..') && !self.contains('//') && !self.startsWith('/') && !self.endsWith('/') && !self.endsWith('.')",message="allowedBranches entries must be valid Git branch names: no '..', '//', or leading or trailing '/', nor a trailing '.'"
	// +kubebuilder:validation:items:XValidation:rule="!self.split('/').exists(c, c.startsWith('.') || c.endsWith('.lock'))",message="no part of an allowedBranches entry between '/' may start with '.' or end with '.lock': Git refuses such branch names"
	// +kubebuilder:validation:items:XValidation:rule="self != 'HEAD'",message="allowedBranches must not name HEAD: Git reserves that name for the checked-out commit"
	// +kubebuilder:validation:items:XValidation:rule="!self.startsWith('refs/')",message="allowedBranches name branches, not refs: write main, not refs/heads/main"
	// +optional
	AllowedBranches []string `json:"allowedBranches"`

	// Push tunes how changes are grouped into commits.
	// +optional
	// +kubebuilder:default={}
	Push PushSpec `json:"push,omitempty"`

	// Commit sets the committer, messages and signing of commits.
	// +optional
	// +kubebuilder:default={}
	Commit CommitSpec `json:"commit,omitempty"`
}

// ForgeSpec names the forge type and its API endpoint.
type ForgeSpec struct {
	// Type of forge.
	// +optional
	Type ForgeType `json:"type,omitempty"`

	// APIURL is the forge API base URL, for GitHub Enterprise Server or a
	// self-hosted Gitea or GitLab. Omitted, it is derived from the URL.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="!self.matches('[[:space:]]') && self.matches('^https?://.+$')",message="must be an https:// or http:// URL without spaces"
	APIURL string `json:"apiURL,omitempty"`
}

// KnownHostsReference names a Secret or ConfigMap key holding known_hosts
// lines.
// +kubebuilder:validation:XValidation:rule="has(self.name)",message="name is required: the Secret or ConfigMap holding the known_hosts",fieldPath=".name"
type KnownHostsReference struct {
	// Kind of the object holding the known_hosts.
	// +optional
	// +kubebuilder:default=Secret
	// +kubebuilder:validation:Enum=Secret;ConfigMap
	Kind string `json:"kind,omitempty"`

	// Name of the object, in the GitProvider's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Name string `json:"name"`

	// Key holding the known_hosts lines.
	// +optional
	// +kubebuilder:default=known_hosts
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key,omitempty"`
}

// PushSpec tunes commit grouping.
type PushSpec struct {
	// CommitWindow is the rolling silence that closes an open commit window:
	// changes by one author to one GitTarget within it share a commit.
	// +optional
	// +kubebuilder:default="5s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+([.][0-9]+)?(ms|s|m|h))+$') && duration(self) <= duration('1h')",message="commitWindow must be a duration such as 500ms, 5s or 1m, at most 1h"
	CommitWindow *metav1.Duration `json:"commitWindow,omitempty"`
}

// CommitSpec sets how commits are made.
type CommitSpec struct {
	// Committer of every commit, and the author when no actor is known.
	// +optional
	// +kubebuilder:default={}
	Committer CommitIdentity `json:"committer,omitempty"`

	// Message templates (Go template syntax over the commit's changes).
	// Each rendered message ends with a "Changed-With: <tool>" trailer per
	// field manager that made its live changes.
	// +optional
	Message *CommitMessageTemplates `json:"message,omitempty"`

	// Signing signs commits with an SSH key.
	// +optional
	Signing *CommitSigning `json:"signing,omitempty"`

	// Mode chooses author mode (the actor as author, the operator as
	// committer) or, on GitHub, verified mode (GitHub signs; the actor goes
	// into trailers).
	// +optional
	// +kubebuilder:default=Author
	Mode CommitMode `json:"mode,omitempty"`
}

// CommitIdentity is a Git name and email.
type CommitIdentity struct {
	// Name shown in Git.
	// +optional
	// +kubebuilder:default="GitOps Reverser"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:XValidation:rule="!self.matches('[<>\\x00-\\x1f\\x7f]')",message="name must not contain '<', '>' or control characters"
	Name string `json:"name,omitempty"`

	// Email shown in Git.
	// +optional
	// +kubebuilder:default="noreply@configbutler.ai"
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:XValidation:rule="self.matches('^[^[:space:]<>@]+@[^[:space:]<>@]+$')",message="must be an email address: one '@', no spaces, '<' or '>'"
	Email string `json:"email,omitempty"`
}

// CommitMessageTemplates are commit message templates in Go template syntax:
// fields, if/else, with, range over .Changes, pipes, and the functions
// capitalize, lower, upper, len, eq, ne and not.
type CommitMessageTemplates struct {
	// EventTemplate renders a commit of live changes.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	EventTemplate string `json:"eventTemplate,omitempty"`

	// ReconcileTemplate renders a commit made by a replay's mark-and-sweep.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	ReconcileTemplate string `json:"reconcileTemplate,omitempty"`

	// GroupTemplate renders a commit that groups several objects.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	GroupTemplate string `json:"groupTemplate,omitempty"`
}

// CommitSigning configures SSH commit signatures.
// +kubebuilder:validation:XValidation:rule="has(self.secretRef)",message="secretRef is required: the Secret holding the signing key",fieldPath=".secretRef"
type CommitSigning struct {
	// SecretRef names the Secret holding the SSH private key
	// (key signing.key unless set).
	// +optional
	SecretRef SecretKeyReference `json:"secretRef"`

	// GenerateWhenMissing generates an ed25519 key into the Secret when it
	// holds none.
	// +optional
	GenerateWhenMissing bool `json:"generateWhenMissing,omitempty"`
}

// GitProviderStatus reports reachability, signing and the forge's rate
// budget.
type GitProviderStatus struct {
	CommonStatus `json:",inline"`

	// Forge is the forge type in effect (given or inferred).
	// +optional
	Forge ForgeType `json:"forge,omitempty"`

	// SigningPublicKey is the public half of the signing key, in
	// authorized_keys format, for allowed-signers files and forge settings.
	// +optional
	SigningPublicKey string `json:"signingPublicKey,omitempty"`

	// RateLimit is the forge's request budget as last reported.
	// +optional
	RateLimit *RateLimitStatus `json:"rateLimit,omitempty"`
}

// RateLimitStatus is a forge's request budget.
type RateLimitStatus struct {
	// Limit of requests in the current window.
	Limit int64 `json:"limit"`
	// Remaining requests in the current window.
	Remaining int64 `json:"remaining"`
	// Reset is when the window resets.
	// +optional
	Reset *metav1.Time `json:"reset,omitempty"`
}

// GitProvider is a Git repository, its credentials, and how commits are
// made to it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=gp,categories=gitops
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.spec.url`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
type GitProvider struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   GitProviderSpec   `json:"spec"`
	Status GitProviderStatus `json:"status,omitempty"`
}

// GitProviderList is a list of GitProviders.
//
// +kubebuilder:object:root=true
type GitProviderList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GitProvider `json:"items"`
}

func init() {
	SchemeBuilder.Register(&GitProvider{}, &GitProviderList{})
}
