package v1alpha3

// Condition types. Ready, Reconciling and Stalled follow kstatus, so GitOps
// tooling can read every kind the same way; the others explain Ready.
const (
	// ConditionReady summarises the object: True when its latest generation is
	// fully in effect.
	ConditionReady = "Ready"
	// ConditionReconciling is True while work is in progress (an initial
	// replay, a pending finalize).
	ConditionReconciling = "Reconciling"
	// ConditionStalled is True when progress needs a human: a spec, a
	// credential or repository content must be fixed.
	ConditionStalled = "Stalled"

	// ConditionValidated (GitTarget, ClusterProvider) says the spec and its
	// references are consistent.
	ConditionValidated = "Validated"
	// ConditionEncryptionConfigured (GitTarget) says sensitive resources can be
	// encrypted before they are written.
	ConditionEncryptionConfigured = "EncryptionConfigured"
	// ConditionStreamsRunning (GitTarget) says every tracked type is past its
	// initial replay and routing live events.
	ConditionStreamsRunning = "StreamsRunning"
	// ConditionGitPathAccepted (GitTarget) says the Git path is safe for the
	// operator to materialize into.
	ConditionGitPathAccepted = "GitPathAccepted"
	// ConditionObjectsWritten (GitTarget) says every object the rules select
	// is written; False names the refused objects and why.
	ConditionObjectsWritten = "ObjectsWritten"
	// ConditionClusterProviderReady (GitTarget) projects the referenced
	// ClusterProvider's readiness.
	ConditionClusterProviderReady = "ClusterProviderReady"
	// ConditionSourceClusterReachable (GitTarget, ClusterProvider) says the
	// source API server currently answers.
	ConditionSourceClusterReachable = "SourceClusterReachable"

	// ConditionPullRequest (GitTarget in mode PullRequest) says where the
	// target's pull request stands. It does not take Ready: the commits
	// reach the head branch whatever it says.
	ConditionPullRequest = "PullRequest"

	// ConditionResourcesResolved (WatchRule, ClusterWatchRule) says the rule's
	// resources resolved against discovery.
	ConditionResourcesResolved = "ResourcesResolved"
	// ConditionGitTargetReady (WatchRule, ClusterWatchRule) mirrors the
	// referenced GitTarget's write readiness.
	ConditionGitTargetReady = "GitTargetReady"

	// ConditionRepositoryReachable (GitProvider) says the repository answered
	// with the configured credentials.
	ConditionRepositoryReachable = "RepositoryReachable"
	// ConditionSigningKeyReady (GitProvider) says a commit signing key is
	// available when signing is configured.
	ConditionSigningKeyReady = "SigningKeyReady"

	// ConditionAuthorAttributed (CommitRequest) says the admission webhook
	// named the submitter.
	ConditionAuthorAttributed = "AuthorAttributed"
	// ConditionPushed (CommitRequest) says the commit reached the remote.
	ConditionPushed = "Pushed"
)

// Condition reasons. Every reason has a row in docs/troubleshooting.md
// saying what it means and what to do; test/docs fails without one.

// Condition reasons shared by several kinds.
const (
	// ReasonSucceeded: the condition holds.
	ReasonSucceeded = "Succeeded"
	// ReasonProgressing: work is under way and expected to finish on its own.
	ReasonProgressing = "Progressing"
	// ReasonInvalidSpec: the spec is inconsistent in a way the schema cannot
	// express; the message names the field.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonSecretNotFound: a referenced Secret, or a key in it, is missing.
	ReasonSecretNotFound = "SecretNotFound"
	// ReasonSecretNamespaceNotGranted: the object reads Secrets in a
	// namespace the operator was not given (--credential-namespaces; the
	// chart's rbac.credentialNamespaces) or whose Secrets its RBAC refuses;
	// the message names the namespace and the chart value to set.
	ReasonSecretNamespaceNotGranted = "SecretNamespaceNotGranted"
)

// GitTarget reasons.
const (
	// ReasonGitProviderNotFound: spec.providerRef names no GitProvider.
	ReasonGitProviderNotFound = "GitProviderNotFound"
	// ReasonGitProviderNotReady: the GitProvider exists but is not Ready.
	ReasonGitProviderNotReady = "GitProviderNotReady"
	// ReasonClusterProviderNotFound: spec.clusterProviderRef names no
	// ClusterProvider.
	ReasonClusterProviderNotFound = "ClusterProviderNotFound"
	// ReasonClusterProviderNotReady: the ClusterProvider exists but is not
	// Ready.
	ReasonClusterProviderNotReady = "ClusterProviderNotReady"
	// ReasonNamespaceNotAllowed: the ClusterProvider's allowedNamespaces does
	// not admit the GitTarget's namespace.
	ReasonNamespaceNotAllowed = "NamespaceNotAllowed"
	// ReasonBranchNotAllowed: spec.branch matches none of the GitProvider's
	// allowedBranches.
	ReasonBranchNotAllowed = "BranchNotAllowed"
	// ReasonPathOverlap: an older GitTarget writing the same repository and
	// branch, in any namespace and through any GitProvider, owns a path that
	// contains or is contained by this one. Only a target that can write
	// holds a path (see holdsPath in internal/controller).
	ReasonPathOverlap = "PathOverlap"
	// ReasonUnsupportedContent: the Git path holds content the operator cannot
	// manage safely; nothing is written until a human cleans it.
	ReasonUnsupportedContent = "UnsupportedContent"
	// ReasonSourceUnreachable: the source API server does not answer.
	ReasonSourceUnreachable = "SourceUnreachable"
	// ReasonResourceNotServed: the source stopped serving a type a rule
	// claims (its CRD was deleted); the message names it. The other types
	// mirror; the claim is dropped once discovery confirms the removal.
	ReasonResourceNotServed = "ResourceNotServed"
	// ReasonInitialReplay: watches are replaying current state.
	ReasonInitialReplay = "InitialReplay"
	// ReasonSourceForbidden: the source's RBAC refuses the operator list or
	// watch on a type a rule claims; the message names the resource, the
	// namespace and the verbs to grant. The streams keep retrying, so a
	// later grant is picked up.
	ReasonSourceForbidden = "SourceForbidden"
	// ReasonEncryptionRequired: a rule claims a sensitive type and the target
	// has no encryption configured; those objects are not written.
	ReasonEncryptionRequired = "EncryptionRequired"
	// ReasonEncryptionNotConfigured: spec.encryption is absent.
	ReasonEncryptionNotConfigured = "EncryptionNotConfigured"
	// ReasonEncryptionKeyMissing: the age key Secret is missing or holds no
	// usable key.
	ReasonEncryptionKeyMissing = "EncryptionKeyMissing"
	// ReasonEncryptionKeyInvalid: a recipient in spec.encryption.age or an
	// *.agekey entry of the key Secret is not an age key.
	ReasonEncryptionKeyInvalid = "EncryptionKeyInvalid"
	// ReasonSuspended (on Ready): spec.suspend is true. The streams keep
	// watching, nothing is committed; Reconciling and Stalled are False,
	// since the operator waits for nothing and needs nobody. Resuming
	// replays the streams into one catch-up commit.
	ReasonSuspended = "Suspended"
	// ReasonHeadBranchConflict: spec.push's head branch is one another
	// GitTarget of the same repository also writes: a direct target on it,
	// or a pull-request target with another base; or it is this target's
	// own spec.branch. Nothing is written until it is unique.
	ReasonHeadBranchConflict = "HeadBranchConflict"
)

// GitTarget reasons of the PullRequest condition (mode PullRequest).
const (
	// ReasonPullRequestOpen (True): the pull request is open and carries
	// every commit so far.
	ReasonPullRequestOpen = "PullRequestOpen"
	// ReasonPullRequestPending (True): no pull request is open: none was
	// needed yet, or the last one was merged or closed; the next change
	// opens one.
	ReasonPullRequestPending = "PullRequestPending"
	// ReasonPullRequestsUnsupported (False): the forge has no pull
	// requests (plain Git): the head branch is pushed, and a human opens
	// the pull request.
	ReasonPullRequestsUnsupported = "PullRequestsUnsupported"
	// ReasonPullRequestConflict (False): the base moved and conflicts with
	// the head, and the forge can neither merge it in nor take a rebuilt
	// head; a human resolves it on the forge. Commits go on to the head.
	ReasonPullRequestConflict = "PullRequestConflict"
	// ReasonPullRequestFailing (False): the last pull request request
	// failed; it is retried at the next update, and commits go on.
	ReasonPullRequestFailing = "PullRequestFailing"
)

// Refusal reasons (GitTarget ObjectsWritten): why an object the rules
// select is not written. EncryptionRequired is one too. The planner
// (manifest.RefusalReason) and the branch worker report these words in
// types of their own, since they cannot import this package; the API owns
// the words and internal/metrics' tests pin every value they declare.
const (
	// ReasonAuxiliaryPath: spec.placement names a file the operator keeps
	// out of its hands (kustomization.yaml, README.md) outright. An object
	// whose own name would make its file kustomization.yaml is written as
	// _kustomization.yaml instead.
	ReasonAuxiliaryPath = "AuxiliaryPath"
	// ReasonInvalidPlacement: spec.placement renders a path the operator will
	// not write for the object.
	ReasonInvalidPlacement = "InvalidPlacement"
	// ReasonSensitiveShared: a sensitive object would share a file in Git
	// with another document.
	ReasonSensitiveShared = "SensitiveShared"
	// ReasonPlaintextBesideEncrypted: a plaintext object would share a file
	// in Git with an encrypted document.
	ReasonPlaintextBesideEncrypted = "PlaintextBesideEncrypted"
	// ReasonIncompleteIdentity: the object lacks what its path needs.
	ReasonIncompleteIdentity = "IncompleteIdentity"
	// ReasonInvalidDocument: the object's rendered YAML is not one
	// Kubernetes document naming the object.
	ReasonInvalidDocument = "InvalidDocument"
	// ReasonNotEncrypted: a sensitive object reached the planner without
	// encryption and was not written in plaintext.
	ReasonNotEncrypted = "NotEncrypted"
	// ReasonEncryptionFailed: the target's encryptor failed on a sensitive
	// object, which was not written in plaintext.
	ReasonEncryptionFailed = "EncryptionFailed"
	// ReasonMarshalFailed: the object cannot be rendered as YAML.
	ReasonMarshalFailed = "MarshalFailed"
	// ReasonObjectsRefused: objects are refused for more than one reason;
	// the message and status.refused list them.
	ReasonObjectsRefused = "ObjectsRefused"
)

// Rule reasons (WatchRule, ClusterWatchRule).
const (
	// ReasonGitTargetNotFound: spec.targetRef names no GitTarget.
	ReasonGitTargetNotFound = "GitTargetNotFound"
	// ReasonGitTargetNotReady: the GitTarget exists but is not Ready.
	ReasonGitTargetNotReady = "GitTargetNotReady"
	// ReasonResourcesUnresolved: a rule names resources discovery does not
	// serve; nothing is watched for them (fail closed).
	ReasonResourcesUnresolved = "ResourcesUnresolved"
	// ReasonSourceNamespaceNotAuthorized: a rule's sourceNamespace is not
	// admitted by the GitTarget's allowedSourceNamespaces.
	ReasonSourceNamespaceNotAuthorized = "SourceNamespaceNotAuthorized"
)

// GitProvider reasons.
const (
	// ReasonRepositoryUnreachable: the repository did not answer.
	ReasonRepositoryUnreachable = "RepositoryUnreachable"
	// ReasonUnauthorized: the forge refused the credentials.
	ReasonUnauthorized = "Unauthorized"
	// ReasonForbidden: the credentials lack permission on the repository.
	ReasonForbidden = "Forbidden"
	// ReasonInvalidCredentials: the credentials exist but cannot be used for
	// the repository: a malformed value (a GitHub App id that is not a
	// number), the wrong kind for the URL's transport, or SSH without
	// known_hosts. The message names the Secret key or the setting to add.
	ReasonInvalidCredentials = "InvalidCredentials"
	// ReasonRateLimited: the forge asked the operator to wait.
	ReasonRateLimited = "RateLimited"
	// ReasonSigningKeyMissing: signing is configured but the Secret or its
	// key does not exist, and no key was generated: generateWhenMissing is
	// false, or the operator may not write the Secret. Nothing is committed
	// until a key exists.
	ReasonSigningKeyMissing = "SigningKeyMissing"
	// ReasonSigningKeyInvalid: the signing key Secret holds something that
	// cannot sign: not an SSH private key, or one protected by a
	// passphrase. Nothing is committed, and the key is never replaced.
	ReasonSigningKeyInvalid = "SigningKeyInvalid"
	// ReasonSigningUnsupported: signing is configured but the forge's API
	// cannot carry a commit signature (Gitea, GitLab). Nothing is committed
	// rather than commits made unsigned.
	ReasonSigningUnsupported = "SigningUnsupported"
)

// CommitRequest reasons, carried on Ready. The branch worker reports
// Committed through FinalizeFailed as branch.RequestReason, pinned to these
// by internal/metrics' tests.
const (
	// ReasonCommitted: the window was committed and pushed.
	ReasonCommitted = "Committed"
	// ReasonNoWindowInGrace: no open window existed within the close delay;
	// nothing to commit (a correct outcome, not an error).
	ReasonNoWindowInGrace = "NoWindowInGrace"
	// ReasonWindowMismatch: the open window belongs to another author or
	// GitTarget, so this request does not close it.
	ReasonWindowMismatch = "WindowMismatch"
	// ReasonAlreadyPresent: the changes were already in Git.
	ReasonAlreadyPresent = "AlreadyPresent"
	// ReasonFinalizeFailed: the commit or push failed, or the GitTarget is
	// not mirrored; the message says why.
	ReasonFinalizeFailed = "FinalizeFailed"
	// ReasonFinalizeTimedOut: the branch worker never answered (it was
	// replaced or stopped); the request is not left in progress forever.
	ReasonFinalizeTimedOut = "FinalizeTimedOut"
	// ReasonFinalizing: the request waits for its commit window to close
	// and be pushed (on Reconciling).
	ReasonFinalizing = "Finalizing"
	// ReasonAdmissionRecordFound: the admission webhook named the submitter.
	ReasonAdmissionRecordFound = "AdmissionRecordFound"
	// ReasonAdmissionRecordMissing: no admission record; the request claims
	// no actor.
	ReasonAdmissionRecordMissing = "AdmissionRecordMissing"
)
