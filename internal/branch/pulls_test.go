package branch

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges"
)

func TestNextPullRequestMakesOneRequestPerUpdate(t *testing.T) {
	for _, tc := range []struct {
		name     string
		number   int64
		noneOpen bool
		changed  bool
		want     pullRequest
	}{
		{"a new worker finds the open one", 0, false, true, requestFind},
		{"after a merge or close it opens one", 0, true, true, requestOpen},
		{"a changed body is edited", 7, false, true, requestEdit},
		{"an unchanged body is read for its state", 7, false, false, requestRead},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := "sent"
			if tc.changed {
				body = "new"
			}
			require.Equal(t, tc.want, nextPullRequest(tc.number, tc.noneOpen, "title", body, "title", "sent"))
		})
	}
}

func TestJudgePullRequest(t *testing.T) {
	pr := func(state forges.PullRequestState, head string, m forges.MergeState) forges.PullRequest {
		return forges.PullRequest{Number: 3, State: state, HeadCommit: head, Mergeable: m}
	}
	for _, tc := range []struct {
		name                    string
		pr                      forges.PullRequest
		baseMerger, mergeParent bool
		want                    verdict
	}{
		{"open and clean: kept", pr(forges.PullRequestOpen, "c1", forges.MergeClean), true, true, verdict{keep: true}},
		{"open, mergeability unknown: kept", pr(forges.PullRequestOpen, "c1", forges.MergeUnknown), true, true, verdict{keep: true}},
		{"merged: fresh and rebuilt (the update's commits are not in it)", pr(forges.PullRequestMerged, "c1", ""), true, true, verdict{fresh: true, rebuild: true}},
		{"closed: fresh and rebuilt", pr(forges.PullRequestClosed, "c1", ""), false, false, verdict{fresh: true, rebuild: true}},
		{"conflicting, the forge merges the base in", pr(forges.PullRequestOpen, "c1", forges.MergeConflicting), true, true, verdict{keep: true, mergeBase: true}},
		{"conflicting, no base merger: rebuilt with a merge parent", pr(forges.PullRequestOpen, "c1", forges.MergeConflicting), false, true, verdict{keep: true, fresh: true, rebuild: true}},
		{"conflicting, neither (GitLab): a human resolves it", pr(forges.PullRequestOpen, "c1", forges.MergeConflicting), false, false, verdict{keep: true, conflict: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := judgePullRequest(tc.pr, tc.baseMerger, tc.mergeParent)
			if tc.want.fresh || tc.want.conflict {
				require.NotEmpty(t, got.note, "what happened is said in the pull request")
			}
			got.note = ""
			require.Equal(t, tc.want, got)
		})
	}
}

func TestJudgeBaseMerge(t *testing.T) {
	for _, tc := range []struct {
		name        string
		err         error
		mergeParent bool
		want        verdict
	}{
		{"merged in", nil, true, verdict{keep: true}},
		{"the head moved: looked at again next time", fmt.Errorf("x: %w", forges.ErrConflict), true, verdict{keep: true}},
		{"conflicts: rebuilt", fmt.Errorf("x: %w", forges.ErrMergeConflict), true, verdict{keep: true, fresh: true, rebuild: true}},
		{"conflicts, no merge parents: a human resolves it", forges.ErrMergeConflict, false, verdict{keep: true, conflict: true}},
		{"a transient failure: kept, retried at the next update", forges.ErrTransient, true, verdict{keep: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := judgeBaseMerge(tc.err, tc.mergeParent)
			got.note = ""
			require.Equal(t, tc.want, got)
		})
	}
}

func TestTheSummaryBlockIsReadBackAndContinued(t *testing.T) {
	var s pullSummary
	s.addCommit([]Change{{Operation: "create", APIVersion: "v1", Kind: "ConfigMap", Path: "m/a.yaml"},
		{Operation: "update", APIVersion: "apps/v1", Kind: "Deployment", Path: "m/d.yaml"}}, "alice")
	s.note("base merged --> in <b>")
	tmpl, err := ParsePullRequestTemplates("", "")
	require.NoError(t, err)
	data := PullRequestData{Target: "team/mirror", Base: "main", Head: "gitops-reverser/mirror", Counts: s.Types,
		Actors: s.Actors, Files: s.Files, Notes: s.Notes, Commits: s.Commits}
	title, body, err := tmpl.render(data)
	require.NoError(t, err)
	require.Equal(t, "Cluster changes to team/mirror", title)
	require.Contains(t, body, "| apps/Deployment | 0 | 1 | 0 |")
	require.Contains(t, body, "**1 added, 1 changed** (commits: 1)")
	require.Contains(t, body, "Changed by: alice")

	full := composeBody(body, s)
	back, ok := readSummary(full)
	require.True(t, ok)
	require.Equal(t, s, back, "a note holding --> does not close the comment early")

	var later pullSummary
	later.addCommit([]Change{{Operation: "delete", APIVersion: "v1", Kind: "ConfigMap", Path: "m/a.yaml"}}, "bob")
	merged := back.merge(later)
	require.Equal(t, 2, merged.Commits)
	require.Equal(t, []TypeCount{{Type: "ConfigMap", Added: 1, Deleted: 1}, {Type: "apps/Deployment", Changed: 1}}, merged.Types)
	require.Equal(t, []string{"alice", "bob"}, merged.Actors)
	require.Equal(t, "delete", merged.Files[0].Operation, "the latest operation of a path, first")
	require.Len(t, merged.Files, 2)

	_, ok = readSummary("a human rewrote it")
	require.False(t, ok)
}

func TestABodyStaysBelowGitHubsLimit(t *testing.T) {
	var s pullSummary
	for i := range 5000 {
		s.addCommit([]Change{{Operation: "create", APIVersion: "v1", Kind: "ConfigMap", Path: fmt.Sprintf("m/%s-%d.yaml", strings.Repeat("x", 80), i)}}, "")
	}
	require.Len(t, s.Files, maxSummaryFiles)
	require.Equal(t, 5000-maxSummaryFiles, s.MoreFiles)
	body := composeBody(strings.Repeat("é", 70000), s)
	require.Less(t, len([]rune(body)), 65536)
	back, ok := readSummary(body)
	require.True(t, ok)
	require.Equal(t, 5000, back.Commits)
}

func TestPullRequestTemplatesRefuseFieldsTheyDoNotHave(t *testing.T) {
	_, err := ParsePullRequestTemplates("{{.Changes}}", "")
	require.ErrorContains(t, err, "title template")
	require.ErrorContains(t, err, "unknown field .Changes")
	_, err = ParsePullRequestTemplates("", "{{range .Files}}{{.Path}} {{.URL}}{{end}} {{len .Counts}} {{.Summary}}")
	require.NoError(t, err)
	_, err = ParseMessages("{{.Counts}}", "", "")
	require.Error(t, err, "commit messages do not read pull request fields")
}
