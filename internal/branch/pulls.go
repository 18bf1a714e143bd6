package branch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/configbutler/gitops-reverser/forges"
)

// pullExec is pull-request mode's state in the executor: the pull request
// the worker keeps open from its head branch into the base, and what it
// last told the forge. Decisions about the forge's answers are the pure
// functions below (nextPullRequest, judgePullRequest, judgeBaseMerge); the
// I/O is Worker.pullRequestStep.
type pullExec struct {
	settings PullRequestSettings
	// number is the open pull request's, 0 when none is known: the next
	// update finds it (or, with noneOpen, opens one straight away).
	number   int64
	url      string
	noneOpen bool
	// sentTitle and sentBody are what the forge holds, so an update that
	// changes neither reads the pull request rather than editing it.
	sentTitle, sentBody string
	summary             pullSummary
	// update is the summary of the commits since the last pull request
	// step: after a merge or close, what the next pull request starts with.
	update pullSummary
	// fresh: the next commit starts afresh from the base (after a merge, a
	// close, or a conflict rebuilt).
	fresh bool
	// conflict: the base conflicts with the head and the forge can do
	// nothing about it (PullRequestInfo.Conflict).
	conflict bool
	// told is set once the worker said the forge has no pull requests.
	told     bool
	lastNote string
	// last is the pull request as the forge last answered.
	last forges.PullRequest
	// recheckAt, when set, is when the pull request is read once more:
	// the last answer did not know its mergeability (GitHub answers null
	// right after a push), and the branch has been quiet since.
	recheckAt time.Time
}

// pullRecheckQuiet is how long after an answer that did not know the
// pull request's mergeability the worker reads it once more, unless a
// commit (and its own request) came first: one request per quiet spell,
// not per update.
const pullRecheckQuiet = time.Minute

func newPullExec(cfg Config) *pullExec {
	if cfg.PullRequest == nil {
		return nil
	}
	return &pullExec{settings: *cfg.PullRequest}
}

// pullRequest is the request an update makes.
type pullRequest int

const (
	// requestFind: no number is known (a new worker): find the open one,
	// and open one when there is none.
	requestFind pullRequest = iota
	// requestOpen: none is open (it was merged or closed): open one.
	requestOpen
	// requestEdit: the rendered title or body changed: edit them.
	requestEdit
	// requestRead: nothing to say: read the pull request for its state.
	requestRead
)

// nextPullRequest is the one request an update makes.
func nextPullRequest(number int64, noneOpen bool, title, body, sentTitle, sentBody string) pullRequest {
	switch {
	case number == 0 && noneOpen:
		return requestOpen
	case number == 0:
		return requestFind
	case title != sentTitle || body != sentBody:
		return requestEdit
	}
	return requestRead
}

// verdict is what the worker does with a pull request the forge answered.
type verdict struct {
	// keep: the pull request is open; keep naming it by number.
	keep bool
	// fresh: the next commit starts afresh from the base; with keep false
	// the next update opens a new pull request.
	fresh bool
	// rebuild: the target's path must be written again from the cluster
	// (Outcome.Rebuild): what the head had is not all in the base.
	rebuild bool
	// mergeBase: ask the forge to merge the base into the head.
	mergeBase bool
	// conflict: the base conflicts and nothing here can resolve it.
	conflict bool
	note     string
}

// judgePullRequest decides what follows a pull request's state: merged or
// closed → start afresh from the base and rebuild. The worker learns of a
// merge at its next update, after that update's commits landed on the old
// head: the merged pull request cannot hold them (a forge's head commit
// of a merged pull request is no proof: Gitea's follows the branch), so
// the path is written again from the cluster on the base, which commits
// only what the base lacks. A closed one's changes are in the cluster and
// not in the base. Open and conflicting → the forge merges the base in
// when it can, else the head is rebuilt on the base when the forge makes
// merge commits, else a human resolves it.
func judgePullRequest(pr forges.PullRequest, baseMerger, mergeParent bool) verdict {
	switch pr.State {
	case forges.PullRequestMerged:
		return verdict{fresh: true, rebuild: true,
			note: fmt.Sprintf("#%d was merged; the next pull request carries the changes made since", pr.Number)}
	case forges.PullRequestClosed:
		return verdict{fresh: true, rebuild: true,
			note: fmt.Sprintf("#%d was closed; the next pull request rewrites the path from the cluster", pr.Number)}
	}
	if pr.Mergeable != forges.MergeConflicting {
		return verdict{keep: true}
	}
	switch {
	case baseMerger:
		return verdict{keep: true, mergeBase: true}
	case mergeParent:
		return verdict{keep: true, fresh: true, rebuild: true, note: rebuiltNote}
	}
	return verdict{keep: true, conflict: true,
		note: "The base branch moved and conflicts with this pull request; the forge cannot merge it in: resolve the conflict on the forge"}
}

const (
	rebuiltNote = "The base branch moved and conflicts with this pull request: the head was rebuilt on the base from the cluster's state"
	// baseMergedInNote is said whether the forge merged new commits of the
	// base in or found the head had them all: MergeBaseIntoHead answers nil
	// for both (Gitea's mergeable reads false while it checks a base that
	// moved, so a conflict it reported may not have been one).
	baseMergedInNote = "The base branch moved and the forge reported a conflict: the forge brought the head up to date with the base"
)

// judgeBaseMerge decides what follows the forge's answer to
// MergeBaseIntoHead.
func judgeBaseMerge(err error, mergeParent bool) verdict {
	switch {
	case err == nil:
		return verdict{keep: true, note: baseMergedInNote}
	case errors.Is(err, forges.ErrConflict):
		// The head moved or the pull request closed: judged again at the
		// next update, on fresh state.
		return verdict{keep: true}
	case errors.Is(err, forges.ErrMergeConflict) && mergeParent:
		return verdict{keep: true, fresh: true, rebuild: true, note: rebuiltNote}
	case errors.Is(err, forges.ErrMergeConflict):
		return verdict{keep: true, conflict: true,
			note: "The base branch moved and conflicts with this pull request: resolve the conflict on the forge"}
	}
	return verdict{keep: true}
}

// prepareFresh makes the next commit start afresh from the base when it
// should: planned on the base head's tree and made a merge of it into the
// head (MergeParent), a fast-forward of the head branch. A head branch
// that is gone starts from the base anyway (readBase), and a forge that
// makes no merge commits commits on top of the old head.
func (w *Worker) prepareFresh(ctx context.Context) error {
	p := w.pr
	if p == nil || !p.fresh || !forges.CommitsMergeParent(w.cfg.Forge) {
		return nil
	}
	if !w.state.known {
		if err := w.state.readHead(ctx); err != nil {
			return err
		}
	}
	if w.state.head == "" || w.state.fresh != "" {
		return nil
	}
	base, err := w.cfg.Forge.Head(ctx, p.settings.Base)
	if errors.Is(err, forges.ErrNotFound) {
		// The base is gone (renamed or deleted after a merge): nothing to
		// start from; the commit goes on to the head, and opening the next
		// pull request says what is missing.
		p.fresh = false
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the head of base branch %s: %w", p.settings.Base, err)
	}
	w.state.fresh = base
	return nil
}

// pullCommitted folds a commit that landed on the head into the summary.
func (w *Worker) pullCommitted(win *window, plan *windowPlan) {
	if w.pr == nil {
		return
	}
	w.pr.fresh = false
	// Only a person or service account attribution named is an actor: the
	// committer authors what nobody was named for (attribution off, a
	// replay's sweep), and is not one.
	actor := ""
	if kind := win.author.kind(); kind == AuthorUser || kind == AuthorServiceAccount {
		actor = win.author.Name
	}
	w.pr.summary.addCommit(plan.changes, actor)
	w.pr.update.addCommit(plan.changes, actor)
}

// pullRequestStep is the pull request request after commits landed on the
// head: one request (two when a new worker finds an open one whose body
// must be brought up to date, or when the base is merged in), then the
// verdict on the forge's answer, then OutcomePullRequest for each target.
// A failure is kept for status and retried at the next update; it never
// holds commits back.
func (w *Worker) pullRequestStep(ctx context.Context) {
	p := w.pr
	if p == nil {
		return
	}
	defer func() { p.update = pullSummary{} }()
	prs, ok := w.cfg.Forge.(forges.PullRequester)
	if !ok {
		if !p.told {
			p.told = true
			w.emitPullRequest(PullRequestInfo{Note: "the forge has no pull requests: the head branch is pushed; open the pull request on the forge"}, false)
		}
		return
	}
	pr, err := w.pullRequestRequest(ctx, prs)
	if err != nil {
		w.cfg.Log.Info("pull request request failed; retried at the next update", "error", err.Error())
		w.emitPullRequest(w.pullInfo(err), false)
		return
	}
	w.judgeAnswer(ctx, prs, pr)
}

// pullRecheckDue is when the pull request is read once more, if it is.
func (w *Worker) pullRecheckDue() (time.Time, bool) {
	if w.pr == nil || w.pr.recheckAt.IsZero() {
		return time.Time{}, false
	}
	return w.pr.recheckAt, true
}

// pullRecheck reads the pull request after a quiet spell and acts on its
// state as after an update.
func (w *Worker) pullRecheck(ctx context.Context) {
	p := w.pr
	p.recheckAt = time.Time{}
	prs, ok := w.cfg.Forge.(forges.PullRequester)
	if !ok || p.number == 0 {
		return
	}
	pr, err := prs.PullRequest(ctx, p.number)
	if err != nil {
		w.cfg.Log.Info("reading the pull request failed", "number", p.number, "error", err.Error())
		return
	}
	w.judgeAnswer(ctx, prs, pr)
}

// judgeAnswer acts on the forge's answer about the pull request and tells
// the targets.
func (w *Worker) judgeAnswer(ctx context.Context, prs forges.PullRequester, pr forges.PullRequest) {
	v := judgePullRequest(pr, isBaseMerger(w.cfg.Forge), forges.CommitsMergeParent(w.cfg.Forge))
	var mergeErr error
	if v.mergeBase {
		err := w.cfg.Forge.(forges.BaseMerger).MergeBaseIntoHead(ctx, pr.Number, pr.HeadCommit)
		v = judgeBaseMerge(err, forges.CommitsMergeParent(w.cfg.Forge))
		w.state.forget() // the forge moved the head, or it moved under us
		if err != nil && !errors.Is(err, forges.ErrConflict) && !errors.Is(err, forges.ErrMergeConflict) {
			mergeErr = fmt.Errorf("merging %s into pull request #%d: %w", w.pr.settings.Base, pr.Number, err)
		}
	}
	w.apply(v, pr)
	if !v.keep && v.rebuild && !forges.CommitsMergeParent(w.cfg.Forge) && w.pr.update.Commits > 0 {
		w.reopen(ctx, prs)
	}
	w.pr.recheckAt = time.Time{}
	if v.keep && pr.State == forges.PullRequestOpen && pr.Mergeable == forges.MergeUnknown {
		w.pr.recheckAt = w.cfg.Clock.Now().Add(pullRecheckQuiet)
	}
	w.emitPullRequest(w.pullInfo(mergeErr), v.rebuild)
}

// reopen opens the next pull request at once after a merge or close on a
// forge without merge commits: the head keeps the commits this update made
// after the merge (or the closed one's), which the base does not have,
// and a rebuild that finds nothing else to change would commit nothing
// and so open nothing. A failure is retried at the next update.
func (w *Worker) reopen(ctx context.Context, prs forges.PullRequester) {
	p := w.pr
	p.fresh = false // nothing to start afresh from: the head carries on
	p.summary = p.update
	title, body, err := w.renderPullRequest(p.summary)
	if err != nil {
		return
	}
	pr, err := w.openPullRequest(ctx, prs, forges.PullRequestOptions{Head: w.cfg.Key.Branch, Base: p.settings.Base, Title: title, Body: body})
	if err != nil {
		w.cfg.Log.Info("opening the next pull request failed; retried at the next update", "error", err.Error())
		return
	}
	p.number, p.url, p.noneOpen, p.last = pr.Number, pr.URL, false, pr
}

// pullRequestRequest renders the title and body and makes the update's
// request.
func (w *Worker) pullRequestRequest(ctx context.Context, prs forges.PullRequester) (forges.PullRequest, error) {
	p := w.pr
	title, body, err := w.renderPullRequest(p.summary)
	if err != nil {
		return forges.PullRequest{}, err
	}
	opts := forges.PullRequestOptions{Head: w.cfg.Key.Branch, Base: p.settings.Base, Title: title, Body: body}
	var pr forges.PullRequest
	switch nextPullRequest(p.number, p.noneOpen, title, body, p.sentTitle, p.sentBody) {
	case requestFind:
		pr, err = prs.FindPullRequest(ctx, opts.Head, opts.Base)
		if errors.Is(err, forges.ErrNotFound) {
			return w.openPullRequest(ctx, prs, opts)
		}
		if err == nil {
			return w.adopt(ctx, prs, pr)
		}
	case requestOpen:
		return w.openPullRequest(ctx, prs, opts)
	case requestEdit:
		if pr, err = prs.EditPullRequest(ctx, p.number, opts); err == nil {
			p.sentTitle, p.sentBody = title, body
		}
	case requestRead:
		pr, err = prs.PullRequest(ctx, p.number)
	}
	if errors.Is(err, forges.ErrNotFound) {
		p.number = 0 // deleted: found (or opened) again at the next update
	}
	if err != nil {
		return pr, fmt.Errorf("pull request from %s into %s: %w", opts.Head, opts.Base, err)
	}
	return pr, nil
}

func (w *Worker) openPullRequest(ctx context.Context, prs forges.PullRequester, opts forges.PullRequestOptions) (forges.PullRequest, error) {
	pr, created, err := prs.OpenPullRequest(ctx, opts)
	if err != nil {
		return pr, fmt.Errorf("opening a pull request from %s into %s: %w", opts.Head, opts.Base, err)
	}
	w.cfg.Log.Info("pull request opened", "number", pr.Number, "url", pr.URL, "created", created)
	if !created {
		return w.adopt(ctx, prs, pr) // another replica's, or an answer lost
	}
	w.pr.sentTitle, w.pr.sentBody = opts.Title, opts.Body
	return pr, nil
}

// adopt continues an open pull request this worker did not open: its
// summary is read back from its body and this worker's commits added,
// and the body is edited when that changed it.
func (w *Worker) adopt(ctx context.Context, prs forges.PullRequester, pr forges.PullRequest) (forges.PullRequest, error) {
	p := w.pr
	if earlier, ok := readSummary(pr.Body); ok {
		p.summary = earlier.merge(p.summary)
	}
	p.sentTitle, p.sentBody = pr.Title, pr.Body
	title, body, err := w.renderPullRequest(p.summary)
	if err != nil || (title == pr.Title && body == pr.Body) {
		return pr, err
	}
	edited, err := prs.EditPullRequest(ctx, pr.Number, forges.PullRequestOptions{Title: title, Body: body})
	if err != nil {
		p.number, p.url = pr.Number, pr.URL // found: named by number from now on
		return pr, fmt.Errorf("updating pull request #%d: %w", pr.Number, err)
	}
	p.sentTitle, p.sentBody = title, body
	return edited, nil
}

// apply keeps what the verdict says.
func (w *Worker) apply(v verdict, pr forges.PullRequest) {
	p := w.pr
	p.lastNote = v.note
	if v.note != "" {
		w.cfg.Log.Info("pull request", "number", pr.Number, "state", string(pr.State), "note", v.note)
	}
	p.conflict = v.conflict
	if v.fresh {
		p.fresh = true
		w.state.forget()
	}
	if !v.keep {
		// Merged or closed: the next change starts a new pull request, and
		// a new summary.
		p.number, p.url, p.noneOpen, p.summary = 0, "", true, pullSummary{}
		p.sentTitle, p.sentBody = "", ""
		p.last = pr
		return
	}
	p.number, p.url, p.noneOpen = pr.Number, pr.URL, false
	if v.note != "" {
		p.summary.note(v.note) // said in the body at the next update
	}
	p.last = pr
}

// pullInfo is where the pull request stands, for status.
func (w *Worker) pullInfo(err error) PullRequestInfo {
	p := w.pr
	info := PullRequestInfo{Head: w.cfg.Key.Branch, Base: p.settings.Base, Supported: true,
		Number: p.number, URL: p.url, Conflict: p.conflict, Note: p.lastNote, Err: err}
	if p.number != 0 {
		info.State = forges.PullRequestOpen
	} else if p.last.Number != 0 {
		info.State = p.last.State
	}
	return info
}

// emitPullRequest tells each target of the worker where the pull request
// stands; rebuild asks the engine to write the targets' paths again.
func (w *Worker) emitPullRequest(info PullRequestInfo, rebuild bool) {
	if !info.Supported {
		info.Head, info.Base = w.cfg.Key.Branch, w.pr.settings.Base
	}
	keys := make([]TargetKey, 0, len(w.state.targets))
	for key := range w.state.targets {
		keys = append(keys, key)
	}
	slices.SortFunc(keys, func(a, b TargetKey) int { return strings.Compare(a.String(), b.String()) })
	for _, key := range keys {
		i := info
		w.emit(Outcome{Kind: OutcomePullRequest, Target: key, PullRequest: &i, Rebuild: rebuild})
	}
}

// renderPullRequest renders the title and the body with its summary
// block.
func (w *Worker) renderPullRequest(s pullSummary) (string, string, error) {
	p := w.pr
	data := PullRequestData{Target: w.targetNames(), Base: p.settings.Base, Head: w.cfg.Key.Branch,
		Counts: s.Types, Actors: s.Actors, MoreFiles: s.MoreFiles, Notes: s.Notes, Commits: s.Commits}
	linker, _ := w.cfg.Forge.(forges.FileLinker)
	for _, f := range s.Files {
		if linker != nil && f.Operation != "delete" {
			f.URL = linker.FileURL(w.cfg.Key.Branch, f.Path)
		}
		data.Files = append(data.Files, f)
	}
	title, body, err := p.settings.Templates.render(data)
	if err != nil {
		return "", "", err
	}
	return title, composeBody(body, s), nil
}

// targetNames are the worker's targets as namespace/name, sorted.
func (w *Worker) targetNames() string {
	var names []string
	for key := range w.state.targets {
		names = append(names, key.String())
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

func isBaseMerger(f forges.Forge) bool {
	_, ok := f.(forges.BaseMerger)
	return ok
}
