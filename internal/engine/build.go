package engine

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/internal/branch"
	"github.com/configbutler/gitops-reverser/internal/credentials"
	"github.com/configbutler/gitops-reverser/internal/forgeconn"
	"github.com/configbutler/gitops-reverser/internal/signing"
)

// Builders is how the engine builds what a worker commits with: the only
// place the GitProvider's credentials and signing key are read and its
// forge client is opened.
type Builders struct {
	// Secrets reads the credentials, known_hosts and signing key Secrets,
	// uncached: the operator's least-privilege Secret reader (the
	// manager's APIReader, limited by RBAC to the credential namespaces
	// the GitProvider controller checked).
	Secrets client.Reader
	// ForgeTransport, when set, wraps the API forges' HTTP transport
	// (request metrics) and counts the requests into count; it is asked
	// once for each forge client opened.
	ForgeTransport func(forge string, count *atomic.Int64) http.RoundTripper
	// Pacers, when set, share GitHub's secondary-limit pacing between the
	// workers of one App installation or token, and the GitProvider
	// controller's probes.
	Pacers *forgeconn.Pacers
}

// WorkerSpec is what the GitTarget controller declares a branch worker is
// built from: its key and the GitProvider (identity, generation, spec).
// Fingerprint, when set, is the fingerprint of that spec from the
// resourceVersions of its Secrets the controller already watches as
// metadata; the engine then builds nothing when the running worker has it.
type WorkerSpec struct {
	Key         branch.Key
	Provider    *v1alpha3.GitProvider
	Fingerprint string
	// PullRequest turns on pull-request mode (Key.Branch is the head
	// branch); PullRequestFingerprint names it (PullRequestFingerprint), so
	// a change of its base or templates replaces the worker.
	PullRequest            *branch.PullRequestSettings
	PullRequestFingerprint string
}

// PullRequestFingerprint names a worker's pull-request settings: the base
// and digests of the title and body templates; "" in direct mode.
func PullRequestFingerprint(base, title, body string) string {
	digest := sha256.Sum256([]byte(title + "\x00" + body))
	return fmt.Sprintf(",pullrequest=%s@%x", base, digest[:8])
}

// SettingsFingerprint names the settings a branch worker is built from:
// the GitProvider's generation and the resourceVersions of its credentials
// Secret, its known_hosts object and its signing key Secret ("" where the
// spec names none).
func SettingsFingerprint(generation int64, credentials, knownHosts, signing string) string {
	return fmt.Sprintf("generation=%d,secret=%s,knownhosts=%s,signing=%s", generation, credentials, knownHosts, signing)
}

// BuildError says why a worker could not be built; the GitTarget waits for
// its provider. Retry is false when only a change of the provider's spec
// can help (invalid commit message templates).
type BuildError struct {
	Err   error
	Retry bool
}

func (e *BuildError) Error() string { return e.Err.Error() }
func (e *BuildError) Unwrap() error { return e.Err }

// PrepareWorker returns the settings ApplyTarget runs spec's worker with.
// When the running worker was built from spec.Fingerprint it builds
// nothing: reading the credentials again and opening a forge client on
// every reconcile would be thrown away. Else it reads the Secrets, opens
// the forge client, parses the templates and loads the signing key.
func (e *Engine) PrepareWorker(ctx context.Context, spec WorkerSpec) (WorkerSettings, error) {
	if spec.Fingerprint != "" {
		if running, ok := e.WorkerFingerprint(spec.Key); ok && running == spec.Fingerprint+spec.PullRequestFingerprint {
			return WorkerSettings{Fingerprint: running}, nil
		}
	}
	s, err := e.opts.Builders.worker(ctx, spec.Provider)
	if err != nil || spec.PullRequest == nil {
		return s, err
	}
	s.Config.PullRequest = spec.PullRequest
	s.Fingerprint += spec.PullRequestFingerprint
	return s, nil
}

func (b Builders) worker(ctx context.Context, gp *v1alpha3.GitProvider) (WorkerSettings, error) {
	creds, err := credentials.Read(ctx, b.Secrets, gp.Namespace, gp.Spec)
	if err != nil {
		return WorkerSettings{}, &BuildError{Err: err, Retry: true}
	}
	var requests atomic.Int64
	var rt http.RoundTripper
	if b.ForgeTransport != nil {
		rt = b.ForgeTransport(string(forgeconn.ForgeType(gp.Spec)), &requests)
	}
	forge, err := b.Pacers.Open(gp.Spec, creds, rt)
	if err != nil {
		return WorkerSettings{}, &BuildError{Err: err, Retry: true}
	}
	var tmpl v1alpha3.CommitMessageTemplates
	if gp.Spec.Commit.Message != nil {
		tmpl = *gp.Spec.Commit.Message
	}
	messages, err := branch.ParseMessages(tmpl.EventTemplate, tmpl.GroupTemplate, tmpl.ReconcileTemplate)
	if err != nil {
		return WorkerSettings{}, &BuildError{Err: err}
	}
	signer, signingVersion, err := b.signer(ctx, gp, forge)
	if err != nil {
		return WorkerSettings{}, &BuildError{Err: err, Retry: true}
	}
	window := 5 * time.Second
	if gp.Spec.Push.CommitWindow != nil {
		window = gp.Spec.Push.CommitWindow.Duration
	}
	return WorkerSettings{
		Fingerprint: SettingsFingerprint(gp.Generation, creds.ResourceVersion, creds.KnownHostsResourceVersion, signingVersion),
		Config: &branch.Config{
			Forge:        forge,
			Committer:    branch.Author{Name: gp.Spec.Commit.Committer.Name, Email: gp.Spec.Commit.Committer.Email},
			Messages:     messages,
			Signer:       signer,
			CommitWindow: window,
			Requests:     requests.Load,
		},
	}, nil
}

// signer reads the GitProvider's signing key; nil without
// spec.commit.signing. It only reads: generating the key is the
// GitProvider controller's job, and the target waits for that provider to
// be Ready. version is the key Secret's resourceVersion, which goes into
// the worker's fingerprint, so a rotated key replaces the worker.
func (b Builders) signer(ctx context.Context, gp *v1alpha3.GitProvider, forge forges.Forge) (signer forges.Signer, version string, err error) {
	spec := gp.Spec.Commit.Signing
	if spec == nil {
		return nil, "", nil
	}
	if !forges.CarriesSignatures(forge) {
		return nil, "", fmt.Errorf("spec.commit.signing is set but the %s forge cannot carry a commit signature",
			gp.Status.Forge)
	}
	key, err := signing.Load(ctx, b.Secrets, gp.Namespace, *spec)
	if err != nil {
		return nil, "", fmt.Errorf("reading the commit signing key: %w", err)
	}
	return key.Signer, key.ResourceVersion, nil
}
