package gogit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges"
)

func TestClassifyMapsGoGitErrorsOntoTheVocabulary(t *testing.T) {
	t.Parallel()
	httpError := func(status int, header http.Header) error {
		return plumbing.NewUnexpectedError(&githttp.Err{Response: &http.Response{StatusCode: status, Header: header}})
	}
	for name, tc := range map[string]struct {
		err  error
		want forges.Kind
	}{
		"authentication required": {fmt.Errorf("%w: realm", transport.ErrAuthenticationRequired), forges.KindUnauthorized},
		"authorization failed":    {transport.ErrAuthorizationFailed, forges.KindForbidden},
		"repository not found":    {transport.ErrRepositoryNotFound, forges.KindNotFound},
		"empty repository":        {transport.ErrEmptyRemoteRepository, forges.KindEmptyRepository},
		"ssh refused every key": {errors.New("ssh: handshake failed: ssh: unable to authenticate, " +
			"attempted methods [none publickey], no supported methods remain"), forges.KindUnauthorized},
		"host key mismatch": {fmt.Errorf("ssh: handshake failed: %w",
			&hostKeyError{host: "h", presented: newEd25519HostKey(t)}), forges.KindForbidden},
		"non-fast-forward":        {errors.New("non-fast-forward update: refs/heads/main"), forges.KindConflict},
		"lease":                   {errors.New("remote ref refs/heads/main required to be a but is b"), forges.KindConflict},
		"too many requests":       {httpError(http.StatusTooManyRequests, http.Header{"Retry-After": {"7"}}), forges.KindRateLimited},
		"payload too large":       {httpError(http.StatusRequestEntityTooLarge, nil), forges.KindTooLarge},
		"bad gateway":             {httpError(http.StatusBadGateway, nil), forges.KindTransient},
		"connection reset":        {io.ErrUnexpectedEOF, forges.KindTransient},
		"deadline":                {context.DeadlineExceeded, forges.KindTransient},
		"already a forge error":   {forges.Errorf(forges.KindConflict, "push", errors.New("x")), forges.KindConflict},
		"wrapped forge not-found": {fmt.Errorf("ctx: %w", forges.Errorf(forges.KindNotFound, "x", nil)), forges.KindNotFound},
	} {
		got := classify("op", tc.err)
		require.Equal(t, tc.want, forges.KindOf(got), name)
		require.ErrorIs(t, got, tc.err, "%s: the original error stays wrapped", name)
	}
	limited := classify("op", httpError(http.StatusTooManyRequests, http.Header{"Retry-After": {"7"}}))
	require.Equal(t, 7*time.Second, forges.RetryAfter(limited))
	require.NoError(t, classify("op", nil))
}

func TestReceivePackRefusalsAreClassified(t *testing.T) {
	t.Parallel()
	report := func(unpack, status string) *packp.ReportStatus {
		return &packp.ReportStatus{UnpackStatus: unpack, CommandStatuses: []*packp.CommandStatus{
			{ReferenceName: "refs/heads/main", Status: status},
		}}
	}
	require.NoError(t, checkReport(nil))
	require.NoError(t, checkReport(report("ok", "ok")))
	require.ErrorIs(t, checkReport(report("ok", "failed to update ref")), forges.ErrConflict)
	require.ErrorIs(t, checkReport(report("ok", "non-fast-forward")), forges.ErrConflict)
	require.ErrorIs(t, checkReport(report("ok", "pre-receive hook declined")), forges.ErrForbidden)
	require.ErrorIs(t, checkReport(report("ok", "protected branch hook declined")), forges.ErrForbidden)
	require.ErrorIs(t, checkReport(report("index-pack abnormal exit", "ok")), forges.ErrTransient)
	require.ErrorIs(t, checkReport(report("ok", "missing necessary objects")), forges.ErrTransient)
}

// upload-pack exits on a want it does not have; which error the client
// sees depends on how far it got writing its request.
func TestHungUpRecognisesAServerThatClosedMidRequest(t *testing.T) {
	t.Parallel()
	for _, err := range []error{
		syscall.EPIPE,
		fmt.Errorf("write: %w", io.ErrUnexpectedEOF),
		errors.New("sending upload-req message: write |1: broken pipe"),
		errors.New("sending upload-req message: encoding flush-pkt: EOF"),
		fmt.Errorf("writing: %w", io.EOF),
	} {
		require.True(t, hungUp(err), "%v", err)
	}
	for _, err := range []error{
		nil,
		errors.New("unexpected client error: reading pack: checksum mismatch"),
		errors.New("EOF in a place that is not the request"),
	} {
		require.False(t, hungUp(err), "%v", err)
	}
}
