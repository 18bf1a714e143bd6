package branch

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/internal/manifest"
)

var (
	alice = Author{Name: "Alice", Email: "alice@example.com", Kind: AuthorUser}
	bob   = Author{Name: "Bob", Email: "bob@example.com", Kind: AuthorUser}
)

// requestWorker is a hand-driven worker whose windows close only when a
// test says so (an hour of silence) or a request closes them.
func requestWorker(t *testing.T) (*Worker, *emptyRepository, func(time.Duration), TargetKey) {
	w, forge, clock, key := handDrivenWorker(t)
	w.cfg.CommitWindow = time.Hour
	step := func(d time.Duration) {
		clock.Step(d)
		w.tick(context.Background())
	}
	return w, forge, step, key
}

func change(name string) Write {
	return Write{ID: manifest.ObjectID{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "team", Name: name},
		YAML: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  namespace: team\n")}
}

// answers are the requests a test attached, whose outcomes it reads.
type answers struct{ requests []*Request }

// all is the outcomes of the requests answered so far, in attach order.
func (a *answers) all() []RequestOutcome {
	var out []RequestOutcome
	for _, r := range a.requests {
		if o, ok := r.Outcome(); ok {
			out = append(out, o)
		}
	}
	return out
}

// request is a CommitRequest due after delay whose outcome got reads; the
// hand-driven worker has no stream, so it answers the request itself.
func request(w *Worker, key TargetKey, submitter *Author, delay time.Duration, message string, got *answers) *Request {
	r := &Request{ID: "team/save", Name: "save", Target: key, Submitter: submitter, Deadline: w.cfg.Clock.Now().Add(delay), Message: message}
	got.requests = append(got.requests, r)
	return r
}

func TestARequestClosesItsSubmittersWindowAtTheDeadlineWithItsMessage(t *testing.T) {
	ctx := context.Background()
	w, forge, step, key := requestWorker(t)
	got := &answers{}
	w.handle(ctx, writeMsg{target: key, author: alice, write: change("one")})
	w.handle(ctx, attachMsg{req: request(w, key, &alice, 2*time.Second, "Release 1.2: tune limits", got)})
	step(time.Second)
	require.Empty(t, forge.commits, "the close delay lets the submitter's own changes join")
	w.handle(ctx, writeMsg{target: key, author: alice, write: change("two")})
	step(time.Second)

	require.Len(t, forge.commits, 1)
	require.Equal(t, "Release 1.2: tune limits", forge.commits[0].Message, "verbatim")
	require.Equal(t, "Alice", forge.commits[0].Author.Name)
	require.Len(t, forge.commits[0].Changes, 3, "both changes and the README")
	require.Equal(t, []RequestOutcome{{Reason: RequestCommitted, Branch: "main", Commit: "0000000000000000000000000000000000000001",
		Detail: "committed and pushed"}}, got.all())
}

func TestARequestNeverClosesAnotherAuthorsWindow(t *testing.T) {
	ctx := context.Background()
	w, forge, step, key := requestWorker(t)
	got := &answers{}
	w.handle(ctx, writeMsg{target: key, author: alice, write: change("one")})
	w.handle(ctx, attachMsg{req: request(w, key, &bob, 0, "Bob's save", got)})
	require.Len(t, got.all(), 1)
	require.Equal(t, RequestWindowMismatch, got.all()[0].Reason)
	require.Contains(t, got.all()[0].Detail, "Alice")
	require.Empty(t, forge.commits, "Alice's window is untouched")

	w.handle(ctx, attachMsg{req: request(w, key, nil, 0, "nobody's save", got)})
	require.Equal(t, RequestWindowMismatch, got.all()[1].Reason, "a request that claims no actor closes no named window")

	step(time.Hour)
	require.Len(t, forge.commits, 1, "the window closes by silence")
	require.NotEqual(t, "Bob's save", forge.commits[0].Message)
}

func TestARequestWithNoWindowByItsDeadlineEndsWithoutACommit(t *testing.T) {
	ctx := context.Background()
	w, forge, step, key := requestWorker(t)
	got := &answers{}
	w.handle(ctx, attachMsg{req: request(w, key, &alice, 3*time.Second, "", got)})
	step(2 * time.Second)
	require.Empty(t, got.all())
	w.handle(ctx, writeMsg{target: key, author: bob, write: change("bobs")}) // not hers to close
	step(time.Second)
	require.Len(t, got.all(), 1)
	require.Equal(t, RequestWindowMismatch, got.all()[0].Reason)

	w.handle(ctx, attachMsg{req: request(w, TargetKey{Namespace: "team", Name: "other"}, &alice, time.Second, "", got)})
	step(time.Second)
	require.Equal(t, RequestNoWindowInGrace, got.all()[1].Reason)
	require.Empty(t, forge.commits)
}

func TestAWindowOpenedWithinTheDelayIsClosedByTheWaitingRequest(t *testing.T) {
	ctx := context.Background()
	w, forge, step, key := requestWorker(t)
	got := &answers{}
	w.handle(ctx, attachMsg{req: request(w, key, nil, 5*time.Second, "saved", got)})
	step(2 * time.Second)
	w.handle(ctx, writeMsg{target: key, write: change("late")}) // the committer's: names nobody
	step(3 * time.Second)
	require.Len(t, forge.commits, 1)
	require.Equal(t, "saved", forge.commits[0].Message)
	require.Equal(t, RequestCommitted, got.all()[0].Reason)
}

func TestARequestedWindowIsNeverMergedWithAnother(t *testing.T) {
	ctx := context.Background()
	w, forge, _, key := requestWorker(t)
	got := &answers{}
	w.core.retryAt = w.cfg.Clock.Now().Add(time.Hour) // the forge asked to wait: windows pile up
	w.handle(ctx, writeMsg{target: key, author: alice, write: change("one")})
	w.handle(ctx, attachMsg{req: request(w, key, &alice, 0, "hers", got)})
	w.handle(ctx, writeMsg{target: key, author: alice, write: change("two")})
	w.finalize(ctx)
	w.core.retryAt = time.Time{}
	w.tick(ctx) // nothing is due but the pending windows: it pushes them
	require.Len(t, forge.commits, 2)
	require.Equal(t, "hers", forge.commits[0].Message)
	require.NotEqual(t, "hers", forge.commits[1].Message)
}

// onForge has a hand-driven worker commit through forge instead.
func onForge(w *Worker, key TargetKey, forge forges.Forge) {
	w.cfg.Forge = forge
	w.state = newBranchState(forge, "main")
	w.updateTarget(context.Background(), targetMsg{target: Target{Key: key, Path: "mirror"}})
}

// failingOnce fails its first commit.
type failingOnce struct {
	emptyRepository
	failed bool
}

func (f *failingOnce) Commit(ctx context.Context, req forges.CommitRequest) (forges.CommitResult, error) {
	if !f.failed {
		f.failed = true
		return forges.CommitResult{}, errors.New("the remote refused")
	}
	return f.emptyRepository.Commit(ctx, req)
}

func TestAFailedRequestedCommitReportsAndIsRetriedWithItsMessage(t *testing.T) {
	ctx := context.Background()
	w, _, step, key := requestWorker(t)
	forge := &failingOnce{}
	onForge(w, key, forge)
	got := &answers{}
	w.handle(ctx, writeMsg{target: key, author: alice, write: change("one")})
	w.handle(ctx, attachMsg{req: request(w, key, &alice, 0, "hers", got)})
	require.Len(t, got.all(), 1)
	require.Equal(t, RequestFinalizeFailed, got.all()[0].Reason)
	require.Contains(t, got.all()[0].Detail, "the remote refused")

	step(time.Minute) // past the retry backoff
	require.Len(t, forge.commits, 1)
	require.Equal(t, "hers", forge.commits[0].Message)
	require.Len(t, got.all(), 1, "a request ends once")
}

func TestARequestEndsWhenItsTargetOrWorkerGoesAway(t *testing.T) {
	ctx := context.Background()
	w, _, _, key := requestWorker(t)
	got := &answers{}
	w.handle(ctx, attachMsg{req: request(w, key, &alice, time.Hour, "", got)})
	w.handle(ctx, writeMsg{target: key, author: alice, write: change("one")})
	w.handle(ctx, targetMsg{target: Target{Key: key}, remove: true})
	require.Len(t, got.all(), 1)
	require.Equal(t, RequestFinalizeFailed, got.all()[0].Reason)

	w.handle(ctx, attachMsg{req: request(w, key, &alice, time.Hour, "", got)})
	w.Discard()
	w.shutdown()
	require.Len(t, got.all(), 2)
	require.Equal(t, RequestFinalizeFailed, got.all()[1].Reason)
}

// failingForge fails every commit as the forge's own failure.
type failingForge struct{ emptyRepository }

func (f *failingForge) Commit(context.Context, forges.CommitRequest) (forges.CommitResult, error) {
	return forges.CommitResult{}, forges.Errorf(forges.KindTransient, "update ref", errors.New("503 down"))
}

// TestARequestQueuedBehindAFailingCommitReportsTheFailure: the forge is
// down; a window without a request fails and waits, and a request closing
// a later window reports the failure instead of staying in progress.
func TestARequestQueuedBehindAFailingCommitReportsTheFailure(t *testing.T) {
	for _, tc := range []struct {
		name  string
		forge forges.Forge
	}{{"the forge fails", &failingForge{}}, {"the target's commit fails", &failingOnce{}}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			w, _, _, key := requestWorker(t)
			onForge(w, key, tc.forge)
			w.handle(ctx, writeMsg{target: key, author: alice, write: change("first")})
			w.finalize(ctx) // fails, and waits for its retry
			got := &answers{}
			w.handle(ctx, writeMsg{target: key, author: alice, write: change("second")})
			w.handle(ctx, attachMsg{req: request(w, key, &alice, 0, "hers", got)})
			require.Len(t, got.all(), 1)
			require.Equal(t, RequestFinalizeFailed, got.all()[0].Reason)
			require.Contains(t, got.all()[0].Detail, "an earlier commit of this branch failed")
		})
	}
}

// TestARequestWhoseEveryObjectIsRefusedIsNoSuccess: nothing of the window
// could be written; the request says so instead of AlreadyPresent.
func TestARequestWhoseEveryObjectIsRefusedIsNoSuccess(t *testing.T) {
	ctx := context.Background()
	w, forge, _, key := requestWorker(t)
	got := &answers{}
	secret := change("creds")
	secret.ID.Kind, secret.ID.Resource, secret.Sensitive = "Secret", "secrets", true // no encryptor: refused
	secret.YAML = []byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\n  namespace: team\n")
	w.handle(ctx, writeMsg{target: key, author: alice, write: secret})
	w.handle(ctx, attachMsg{req: request(w, key, &alice, 0, "hers", got)})
	require.Len(t, got.all(), 1)
	require.Equal(t, RequestFinalizeFailed, got.all()[0].Reason)
	require.Contains(t, got.all()[0].Detail, "does not write 1 of the window's objects")
	require.Len(t, forge.commits, 0)
}

// TestAStoppedWorkerRefusesWhatIsSentToIt: a send to a worker whose loop
// has ended fails at once instead of waiting on a queue nobody reads.
func TestAStoppedWorkerRefusesWhatIsSentToIt(t *testing.T) {
	w, _, _, key := requestWorker(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	cancel()
	require.NoError(t, <-done)
	err := w.Attach(context.Background(), &Request{Target: key})
	require.ErrorIs(t, err, ErrWorkerStopped)
}
