package controller

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
)

// TestSummaryTransitionsAreAnnounced: an Event for each change of Ready's
// status or reason or of Stalled, Warning for a failure, Normal for Ready,
// suspension and progress; none when the summary stays as it was.
func TestSummaryTransitionsAreAnnounced(t *testing.T) {
	var conditions []metav1.Condition
	set := newConditionSet(&conditions, 1)
	recorder := events.NewFakeRecorder(10)
	step := func(mark func()) []string {
		before := append([]metav1.Condition(nil), conditions...)
		mark()
		announceTransition(recorder, &v1alpha3.GitProvider{}, before, conditions)
		var got []string
		for len(recorder.Events) > 0 {
			got = append(got, <-recorder.Events)
		}
		return got
	}

	require.Equal(t, []string{"Normal Progressing Reconciling: checking"},
		step(func() { set.markReconciling(v1alpha3.ReasonProgressing, "checking") }))
	require.Equal(t, []string{"Warning Unauthorized Stalled: the forge refused the credentials"},
		step(func() { set.markStalled(v1alpha3.ReasonUnauthorized, "the forge refused the credentials") }))
	require.Empty(t, step(func() { set.markStalled(v1alpha3.ReasonUnauthorized, "the forge refused the credentials again") }),
		"the same summary with another message is no transition")
	require.Equal(t, []string{"Warning RepositoryUnreachable Reconciling: timeout"},
		step(func() { set.markReconciling(v1alpha3.ReasonRepositoryUnreachable, "timeout") }))
	require.Equal(t, []string{"Normal Succeeded Ready: the repository answers"},
		step(func() { set.markReady(v1alpha3.ReasonSucceeded, "the repository answers") }))
	require.Equal(t, []string{"Normal Suspended Suspended: spec.suspend is true"},
		step(func() { set.markSuspended("spec.suspend is true") }))
	announceTransition(nil, &v1alpha3.GitProvider{}, nil, conditions) // no recorder: nothing, no panic
}

// TestEventNotesCarryNoPasswordAndFitTheAPI: a URL's password is redacted
// as url.URL.Redacted does, and a note longer than the events API takes
// is cut on a character boundary.
func TestEventNotesCarryNoPasswordAndFitTheAPI(t *testing.T) {
	note := eventNote("cloning https://bot:ghp_s3cr3t@github.com/org/repo.git failed; ssh://git@host:22/r is fine")
	require.Equal(t, "cloning https://bot:xxxxx@github.com/org/repo.git failed; ssh://git@host:22/r is fine", note)

	long := eventNote(strings.Repeat("é", 2000))
	require.LessOrEqual(t, len(long), maxEventNote)
	require.True(t, utf8.ValidString(long))
	require.True(t, strings.HasSuffix(long, "…"))
}
