package sshsign

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/configbutler/gitops-reverser/test/gitverify"
)

func generated(t *testing.T) *Signer {
	t.Helper()
	key, err := Generate("test key")
	require.NoError(t, err)
	signer, err := Parse(key)
	require.NoError(t, err)
	return signer
}

// signedCommit builds a commit object the way the go-git forge does: the
// signature covers the encoding without it and goes into gpgsig.
func signedCommit(t *testing.T, signer *Signer, message string) []byte {
	t.Helper()
	when := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	commit := &object.Commit{
		Author:    object.Signature{Name: "Alice", Email: "alice@example.com", When: when},
		Committer: object.Signature{Name: "GitOps Reverser", Email: "noreply@configbutler.ai", When: when},
		Message:   message,
		TreeHash:  plumbing.NewHash("4b825dc642cb6eb9a060e54bf8d69288fbee4904"),
	}
	unsigned := &plumbing.MemoryObject{}
	require.NoError(t, commit.EncodeWithoutSignature(unsigned))
	signature, err := signer.Sign(objectBytes(t, unsigned))
	require.NoError(t, err)
	commit.PGPSignature = string(signature)
	signed := &plumbing.MemoryObject{}
	require.NoError(t, commit.Encode(signed))
	return objectBytes(t, signed)
}

func objectBytes(t *testing.T, obj *plumbing.MemoryObject) []byte {
	t.Helper()
	reader, err := obj.Reader()
	require.NoError(t, err)
	defer reader.Close()
	content, err := io.ReadAll(reader)
	require.NoError(t, err)
	return content
}

func TestGitVerifyCommitAcceptsTheSignatureAndRefusesATamperedCommit(t *testing.T) {
	signer := generated(t)
	raw := signedCommit(t, signer, "mirror team-a/app\n")
	allowed := gitverify.AllowedSigners("noreply@configbutler.ai", signer.PublicKey())

	_, report, err := gitverify.VerifyCommit(t, raw, allowed)
	require.NoError(t, err, report)
	require.Contains(t, report, `Good "git" signature for noreply@configbutler.ai with ED25519 key `+signer.Fingerprint())

	_, report, err = gitverify.VerifyCommit(t, gitverify.WithMessage(t, raw, "mirror team-b/app\n"), allowed)
	require.Error(t, err, "a changed message under the same signature must fail: %s", report)

	other := generated(t)
	_, report, err = gitverify.VerifyCommit(t, raw, gitverify.AllowedSigners("noreply@configbutler.ai", other.PublicKey()))
	require.Error(t, err, "a key the allowed signers do not list must fail: %s", report)
}

func TestSignatureIsArmoredSSHSIGInTheGitNamespace(t *testing.T) {
	signer := generated(t)
	payload := []byte("tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n\nmessage\n")
	signature, err := signer.Sign(payload)
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(signature, []byte("-----BEGIN SSH SIGNATURE-----\n")), "%s", signature)
	require.True(t, bytes.HasSuffix(signature, []byte("-----END SSH SIGNATURE-----\n")), "%s", signature)
	require.NoError(t, Verify(payload, signature, signer.PublicKey()))
	require.Error(t, Verify([]byte("tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n\nother\n"), signature, signer.PublicKey()))
}

func TestGenerateWritesAnOpenSSHEd25519Key(t *testing.T) {
	key, err := Generate("gitops-reverser team-a/repo")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(key), "-----BEGIN OPENSSH PRIVATE KEY-----\n"), "%s", key[:40])
	signer, err := Parse(key)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(signer.PublicKey(), "ssh-ed25519 AAAA"), signer.PublicKey())
	require.NotContains(t, signer.PublicKey(), "\n")
	require.True(t, strings.HasPrefix(signer.Fingerprint(), "SHA256:"))

	again, err := Generate("gitops-reverser team-a/repo")
	require.NoError(t, err)
	require.NotEqual(t, key, again, "every key is new")
}

func TestParseRefusesWhatCannotSign(t *testing.T) {
	_, private, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	protected, err := ssh.MarshalPrivateKeyWithPassphrase(private, "", []byte("secret"))
	require.NoError(t, err)

	cases := []struct {
		name string
		key  []byte
		want string
	}{
		{"empty", nil, "the key is empty"},
		{"blank", []byte("\n  \n"), "the key is empty"},
		{"not a key", []byte("hello"), "invalid SSH signing key"},
		{"a public key", []byte(generated(t).PublicKey()), "invalid SSH signing key"},
		{"passphrase", pem.EncodeToMemory(protected), "protected by a passphrase"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.key)
			require.ErrorIs(t, err, ErrInvalidKey)
			require.ErrorContains(t, err, tc.want)
		})
	}
}
