package bench

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// shortWindow is scenario F's commit window: short enough that the gaps
// between a replay's events close it.
const shortWindow = time.Millisecond

// Scenario F's targets beyond those of A-D: on Gitea's API path a cold start
// and a burst take at most twice what a smart-HTTP push to the same Gitea
// takes, a restart after offline changes 3 s in one commit, and a restart
// with nothing changed is Ready within 2 s after at most 5 forge requests.
const (
	shortWindowAgainstPush = 2
	shortWindowRestart     = 3 * time.Second
	shortWindowReady       = 2 * time.Second
	shortWindowRequests    = 5
)

// shortWindowForges runs the smart-HTTP push to Gitea first, so the Gitea
// API forge's targets can be derived from its figures.
var shortWindowForges = []forgeKind{forgeGiteaPush, forgeGit, forgeGitea, forgeGitHub}

// pushFigures are the gitea-push run's figures, by name, for the Gitea API
// forge's targets.
var pushFigures = struct {
	sync.Mutex
	seconds map[string]float64
}{seconds: map[string]float64{}}

// BenchmarkShortWindow is scenario F, a user's workload on Gitea: the fleet
// of A (2,000 ConfigMaps in 20 namespaces, admitted by a namespace
// selector, one stream per namespace) with spec.push.commitWindow 1ms. In
// order on one mirror: the cold start (A), a burst of 2,000 updates (C), a
// restart after 50 deletes and 50 edits made while stopped (D) and a
// restart with nothing changed (D'). A replay must be one commit whatever
// the window. One sub-benchmark per forge, and gitea-push: the git forge
// pushing to the same Gitea with the same token.
func BenchmarkShortWindow(b *testing.B) { forEachForgeOf(b, shortWindowForges, shortWindowRun) }

func shortWindowRun(b *testing.B, fk forgeKind) {
	e := sharedEnv(b)
	ctx := context.Background()
	m, f := newFleetMirror(b, e, "short", mirrorOptions{forge: fk, commitWindow: shortWindow})

	r := newReporter(b, "F 1ms window: A cold start", fk)
	base, err := startMark(e, m)
	require.NoError(b, err)
	op, reached := startOnFleet(b, e, m, f, m.name+"-cold")
	cold := seconds(reached.Sub(op.started))
	commits, err := m.remote.commitCount(ctx)
	require.NoError(b, err)
	requests, err := markRequests(ctx, e, op, m, base, commits)
	require.NoError(b, err)
	r.upTo("start to all files in Git", cold, "s", againstPush(fk, "cold", cold))
	// GitHub's Git Database API cannot write into an empty repository: its
	// bootstrap makes a first commit through the contents API (docs).
	replayCommits := 1.0
	if fk == forgeGitHub {
		replayCommits = 2
	}
	r.atMost("commits", float64(commits), "", replayCommits)
	reportRequests(r, m, "", base, requests, commits, 0)
	require.NoError(b, waitReady(ctx, e, m, op, time.Minute))

	r = newReporter(b, "F 1ms window: C burst", fk)
	measureBurst(b, r, e, op, m, f, func(took float64) float64 { return againstPush(fk, "burst", took) })
	stopOperator(b, op)

	limits := restartLimits{matched: seconds(shortWindowRestart)}
	restartAfterOfflineChanges(b, e, m, f, "F 1ms window: D restart, 50+50 offline", limits)
	limits = restartLimits{ready: seconds(shortWindowReady), requests: shortWindowRequests}
	restartWithNothingChanged(b, e, m, "F 1ms window: D' restart, nothing changed", limits)
}

// againstPush records the gitea-push figure named what and returns the
// Gitea API forge's limit for it (shortWindowAgainstPush times the push
// figure); zero, "for information", elsewhere or when no push run came
// first.
func againstPush(fk forgeKind, what string, value float64) float64 {
	pushFigures.Lock()
	defer pushFigures.Unlock()
	switch fk {
	case forgeGiteaPush:
		pushFigures.seconds[what] = value
	case forgeGitea:
		return shortWindowAgainstPush * pushFigures.seconds[what]
	}
	return 0
}
