// Package sshsign signs Git commits with an SSH key, in the format `git
// verify-commit` checks when gpg.format is ssh: an SSHSIG signature
// (namespace "git", SHA-512) over the commit object without its signature,
// armored as "-----BEGIN SSH SIGNATURE-----".
//
// It holds no Kubernetes or forge code: a Signer is a forges.Signer, and
// keys arrive as the bytes of an OpenSSH or PEM private key file.
package sshsign

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"

	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"
)

// Namespace is the SSHSIG namespace Git signs commits and tags in; `git
// verify-commit` refuses a signature made in any other.
const Namespace = "git"

// hashAlgorithm is what ssh-keygen -Y sign uses by default, so signatures
// look like the ones Git makes itself.
const hashAlgorithm = sshsig.HashSHA512

// ErrInvalidKey matches an error saying the key bytes are not a usable
// private key: not a key at all, protected by a passphrase (the operator has
// nowhere to read one from), or of a type SSH cannot sign with.
var ErrInvalidKey = errors.New("invalid SSH signing key")

// Signer signs commit payloads with one private key.
type Signer struct {
	key ssh.Signer
}

// Parse reads a private key file (OpenSSH "BEGIN OPENSSH PRIVATE KEY", or
// PEM RSA, EC or PKCS#8) into a Signer. The error names what is wrong and
// never includes key material.
func Parse(privateKey []byte) (*Signer, error) {
	if len(bytes.TrimSpace(privateKey)) == 0 {
		return nil, fmt.Errorf("%w: the key is empty", ErrInvalidKey)
	}
	key, err := ssh.ParsePrivateKey(privateKey)
	var passphraseMissing *ssh.PassphraseMissingError
	switch {
	case errors.As(err, &passphraseMissing):
		return nil, fmt.Errorf("%w: the key is protected by a passphrase; store it without one", ErrInvalidKey)
	case err != nil:
		// ssh's messages describe the format ("no key found"), not the
		// key, so they are safe to pass on.
		return nil, fmt.Errorf("%w: %v", ErrInvalidKey, err)
	}
	return &Signer{key: key}, nil
}

// Generate makes a new ed25519 key and returns it as an OpenSSH private key
// file (what ssh-keygen -t ed25519 writes), with comment as its comment.
func Generate(comment string) ([]byte, error) {
	_, private, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating an ed25519 key: %w", err)
	}
	block, err := ssh.MarshalPrivateKey(private, comment)
	if err != nil {
		return nil, fmt.Errorf("encoding the ed25519 key in OpenSSH format: %w", err)
	}
	return pem.EncodeToMemory(block), nil
}

// Sign returns the armored signature of payload, the commit object as Git
// encodes it without a gpgsig header.
func (s *Signer) Sign(payload []byte) ([]byte, error) {
	signature, err := sshsig.Sign(bytes.NewReader(payload), s.key, hashAlgorithm, Namespace)
	if err != nil {
		return nil, fmt.Errorf("SSH-signing the commit with %s: %w", s.Fingerprint(), err)
	}
	return sshsig.Armor(signature), nil
}

// PublicKey is the public half in authorized_keys format ("ssh-ed25519
// AAAA..."), without a comment or newline: the form an allowed_signers line
// and a forge's "signing key" setting take.
func (s *Signer) PublicKey() string {
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(s.key.PublicKey())))
}

// Fingerprint is the key's SHA256 fingerprint as ssh-keygen -l prints it,
// for messages that must name a key without showing it.
func (s *Signer) Fingerprint() string {
	return ssh.FingerprintSHA256(s.key.PublicKey())
}

// Verify checks that armored is a signature of payload by publicKey (in
// authorized_keys format) in the git namespace. It is what git
// verify-commit checks, minus the allowed-signers lookup.
func Verify(payload, armored []byte, publicKey string) error {
	key, _, _, _, err := ssh.ParseAuthorizedKey([]byte(publicKey))
	if err != nil {
		return fmt.Errorf("parsing the public key: %w", err)
	}
	signature, err := sshsig.Unarmor(armored)
	if err != nil {
		return fmt.Errorf("reading the armored signature: %w", err)
	}
	if err := sshsig.Verify(bytes.NewReader(payload), signature, key, hashAlgorithm, Namespace); err != nil {
		return fmt.Errorf("verifying the signature: %w", err)
	}
	return nil
}
