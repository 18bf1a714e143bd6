package forgetest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/forges/sshsign"
	"github.com/configbutler/gitops-reverser/test/gitverify"
)

// signedCommit: a forge that carries signatures stores the signed commit
// so that git verify-commit accepts it with an allowed_signers file naming
// the key, and refuses the same signature under a changed message. A forge
// that cannot carry one says so up front (forges.CarriesSignatures) and
// refuses a signed request with ErrSigningUnsupported, leaving the branch
// where it was: an unsigned commit is never the fallback.
func signedCommit(t *testing.T, f Fixture, o Options) {
	r := f.NewRepo(t, "signed", map[string]string{"a.yaml": "a: 1\n"})
	key, err := sshsign.Generate("forge contract")
	require.NoError(t, err)
	signer, err := sshsign.Parse(key)
	require.NoError(t, err)
	before := head(t, r, "main")
	req := commitRequest(t, "main", before, put("signed.yaml", "signed: true\n"))
	req.Signer = signer
	res, err := r.Forge.Commit(context.Background(), req)

	if o.RefusesSigner {
		require.False(t, forges.CarriesSignatures(r.Forge), "the forge says it cannot sign")
		require.ErrorIs(t, err, forges.ErrSigningUnsupported)
		require.Equal(t, before, r.Head(t, "main").ID, "nothing was committed, signed or not")
		return
	}
	require.True(t, forges.CarriesSignatures(r.Forge), "the forge says it signs")
	require.NoError(t, err)
	require.Equal(t, res.Commit, head(t, r, "main"))

	raw := r.CommitObject(t, res.Commit)
	allowed := gitverify.AllowedSigners(committer.Email, signer.PublicKey())
	id, report, err := gitverify.VerifyCommit(t, raw, allowed)
	require.Equal(t, res.Commit, id, "the verified object is the commit the forge reported")
	require.NoError(t, err, "git verify-commit: %s\n%s", report, raw)
	require.Contains(t, report, `Good "git" signature for `+committer.Email)

	_, report, err = gitverify.VerifyCommit(t, gitverify.WithMessage(t, raw, "contract: forged\n"), allowed)
	require.Error(t, err, "a tampered commit must not verify: %s", report)
}
