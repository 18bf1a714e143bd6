// Package branch holds the BranchWorker: one per (provider namespace,
// provider, branch), a single FIFO event loop that groups object writes into
// commit windows and commits them through a forge with compare-and-swap on
// the branch head. It decides when and how to commit (the Core, a pure state
// machine: events in, actions out) and runs those decisions (the Worker, its
// executor: the one goroutine that does the forge I/O); what to write is the
// manifest planner's job.
package branch

import (
	"time"

	yaml "go.yaml.in/yaml/v3"

	"github.com/configbutler/gitops-reverser/internal/manifest"
)

// Key identifies a worker: every write to one branch of one GitProvider goes
// through the same worker.
type Key struct {
	ProviderNamespace string
	Provider          string
	Branch            string
}

func (k Key) String() string { return k.ProviderNamespace + "/" + k.Provider + "@" + k.Branch }

// TargetKey names a GitTarget.
type TargetKey struct{ Namespace, Name string }

func (t TargetKey) String() string { return t.Namespace + "/" + t.Name }

// AuthorKind says who an author is, for commits_total{author_kind}.
type AuthorKind string

const (
	// AuthorCommitter: no actor is claimed; the operator authors the commit.
	AuthorCommitter AuthorKind = "committer"
	// AuthorUser: a human named by attribution.
	AuthorUser AuthorKind = "user"
	// AuthorServiceAccount: a service account named by attribution.
	AuthorServiceAccount AuthorKind = "serviceaccount"
	// AuthorUnresolved: attribution ran and could not name anybody.
	AuthorUnresolved AuthorKind = "unresolved"
)

// Author is who a window's changes are attributed to. The zero value is the
// configured committer.
type Author struct {
	Name  string
	Email string
	Kind  AuthorKind
}

func (a Author) kind() AuthorKind {
	if a.Kind == "" {
		return AuthorCommitter
	}
	return a.Kind
}

// Write is the desired state of one object: its sanitized YAML, or a delete
// when YAML is nil.
type Write struct {
	ID   manifest.ObjectID
	YAML []byte
	// Node is the tree YAML was rendered from (sanitize.RenderNode), handed
	// to the planner so it parses nothing of what was just rendered
	// (manifest.Upsert.Node). It is a cache, not state: a journal does not
	// keep it, and a Write without it is parsed once by the planner.
	Node      *yaml.Node `json:"-"`
	Sensitive bool
	// Received is when the watch delivered the event, for latency metrics.
	Received time.Time
	// ChangedWith names the tools (field managers, attribution.ChangedWith)
	// that made a live change, for the commit's Changed-With trailers. A
	// tool is not an author: it never decides who a commit is attributed
	// to. Empty for a delete (an object's last managedFields do not say who
	// deleted it) and for a replay.
	ChangedWith []string
	// Replay marks an object reported by a replay still in progress: it
	// holds the window open until the target's replay completes (see
	// window.replaying).
	Replay bool
	// CatchUp marks a live change a resumed watch re-delivered from before
	// the operator started: like a replay's, it holds the window open
	// until every stream of the target has caught up (Sync with
	// closeWindow), so a catch-up is not committed in parts.
	CatchUp bool
}

// Sweep is a replay's mark-and-sweep for one type in one scope: managed
// documents of that type (and namespace) not in Present are deleted. It is
// the planner's own description, which plans a window's sweeps in one pass
// (manifest.SweepAll).
type Sweep = manifest.ScopeSweep

// Target is what a worker needs to know of a GitTarget.
type Target struct {
	Key  TargetKey
	Path string
	// Encryptor encrypts the target's sensitive objects; nil when the
	// target cannot encrypt, and the planner then refuses them.
	Encryptor Encryptor
	// Placement is the target's declared policy (spec.placement) for new
	// objects; a change applies to the next object placed and never moves
	// an existing file.
	Placement manifest.Placement
}

// Encryptor turns a sensitive object's sanitized YAML into a SOPS
// document (internal/encryption).
type Encryptor interface {
	// EncryptTree returns the encrypted document. object names the object;
	// existing is its current document in Git, nil when it has none, and is
	// returned unchanged when it already holds plaintext, so an unchanged
	// object makes no commit.
	//
	// tree is plaintext's tree when the write carries it (Write.Node), read
	// instead of parsing plaintext; nil parses it.
	EncryptTree(object string, plaintext []byte, tree *yaml.Node, existing []byte) ([]byte, error)
	// SopsConfig is the .sops.yaml staged at the target root with the
	// first write.
	SopsConfig() []byte
}

// CommitInfo reports a commit that reached the remote.
type CommitInfo struct {
	Target  TargetKey
	Commit  string
	URL     string
	Time    time.Time
	Author  Author
	Objects int
}
