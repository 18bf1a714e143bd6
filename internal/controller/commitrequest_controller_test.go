package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
)

// TestARequestFromBeforeARestartGetsItsAttachGraceFromTheStart: a request
// created before this process started (a restart, a leader change) waits
// for its GitTarget from the start, not from its creation long ago.
func TestARequestFromBeforeARestartGetsItsAttachGraceFromTheStart(t *testing.T) {
	created := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	delay := int32(5)
	cr := &v1alpha3.CommitRequest{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)},
		Spec: v1alpha3.CommitRequestSpec{CloseDelaySeconds: &delay}}

	require.Equal(t, created.Add(35*time.Second), attachGraceEnds(cr, created.Add(-time.Hour)), "created while running")
	started := created.Add(10 * time.Minute)
	require.Equal(t, started.Add(35*time.Second), attachGraceEnds(cr, started), "created before the start")
}
