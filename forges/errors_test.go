package forges_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges"
)

func TestErrorsMatchTheirKindThroughWrapping(t *testing.T) {
	cause := errors.New("422 Update is not a fast forward")
	err := fmt.Errorf("committing to main: %w", forges.Errorf(forges.KindConflict, "update ref", cause))

	require.ErrorIs(t, err, forges.ErrConflict)
	require.NotErrorIs(t, err, forges.ErrNotFound)
	require.ErrorIs(t, err, cause, "the forge's own error stays wrapped")
	require.Equal(t, forges.KindConflict, forges.KindOf(err))
	require.Equal(t, forges.KindTransient, forges.KindOf(errors.New("plain")))
	require.Contains(t, err.Error(), "update ref: conflict: 422 Update is not a fast forward")
}

func TestRateLimitedCarriesTheWait(t *testing.T) {
	err := &forges.Error{Kind: forges.KindRateLimited, Op: "create tree", RetryAfter: 30 * time.Second}
	wrapped := fmt.Errorf("flush: %w", err)
	require.ErrorIs(t, wrapped, forges.ErrRateLimited)
	require.Equal(t, 30*time.Second, forges.RetryAfter(wrapped))
	require.Contains(t, err.Error(), "retry after 30s")
}

func TestAMergeConflictIsNotAMovedHead(t *testing.T) {
	err := fmt.Errorf("update branch: %w", forges.Errorf(forges.KindMergeConflict, "update-branch", errors.New("422")))
	require.ErrorIs(t, err, forges.ErrMergeConflict)
	require.NotErrorIs(t, err, forges.ErrConflict, "reading again does not help: the head must be rebuilt")
	require.Contains(t, err.Error(), "merge conflict")
}
