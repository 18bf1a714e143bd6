package encryption

import (
	"crypto/sha512"
	"errors"
	"fmt"
	"hash"
	"regexp"
	"strings"
	"time"
)

// Encrypting and decrypting a tree's values, and its MAC, as the SOPS file
// format defines them for the files the operator writes: an
// encrypted_regex decides which values are encrypted, and the MAC covers
// every value (sops' mac_only_encrypted is never set).
//
// The MAC is SHA-512 over the plaintext of every scalar in document order
// (encodeValue's bytes, nulls skipped), written as upper-case hex and
// stored encrypted like a value, with the file's lastmodified as
// additional data. It makes a changed value, a value moved, or a readable
// field edited by hand fail decryption.

// encryptionRule is a file's encrypted_regex: a value is encrypted when a
// key on its path matches. Without a regex every value is.
type encryptionRule struct{ re *regexp.Regexp }

func newEncryptionRule(expr string) (encryptionRule, error) {
	if expr == "" {
		return encryptionRule{}, nil
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return encryptionRule{}, fmt.Errorf("the encrypted_regex does not compile: %w", err)
	}
	return encryptionRule{re: re}, nil
}

func (r encryptionRule) encrypts(path []string) bool {
	if r.re == nil {
		return true
	}
	for _, key := range path {
		if r.re.MatchString(key) {
			return true
		}
	}
	return false
}

// additionalData binds a value to its place: its keys joined with ":" and
// a trailing ":" (data:password:).
func additionalData(path []string) string {
	return strings.Join(path, ":") + ":"
}

// macHash accumulates the plaintext values of a tree.
type macHash struct{ h hash.Hash }

func newMACHash() macHash { return macHash{h: sha512.New()} }

func (m macHash) add(value any) error {
	_, plain, err := encodeValue(value)
	if err != nil {
		return err
	}
	m.h.Write(plain)
	return nil
}

func (m macHash) hex() string { return fmt.Sprintf("%X", m.h.Sum(nil)) }

// sealTree encrypts, in place, the values of b the rule selects, and
// returns the MAC of b's plaintext.
func sealTree(b branch, rule encryptionRule, c *valueCipher) (string, error) {
	mac := newMACHash()
	err := b.walk(nil, func(value any, path []string) (any, error) {
		if err := mac.add(value); err != nil {
			return nil, fmt.Errorf("at %s: %w", additionalData(path), err)
		}
		if !rule.encrypts(path) {
			return value, nil
		}
		enc, err := c.encrypt(value, additionalData(path))
		if err != nil {
			return nil, fmt.Errorf("encrypting %s: %w", additionalData(path), err)
		}
		return enc, nil
	})
	if err != nil {
		return "", err
	}
	return mac.hex(), nil
}

// openTree decrypts, in place, the values of b the rule selects, and
// returns the MAC of b's plaintext.
func openTree(b branch, rule encryptionRule, c *valueCipher) (string, error) {
	mac := newMACHash()
	err := b.walk(nil, func(value any, path []string) (any, error) {
		if rule.encrypts(path) {
			text, ok := value.(string)
			if !ok {
				return nil, fmt.Errorf("at %s: an encrypted value is a %T, not a string", additionalData(path), value)
			}
			var err error
			if value, err = c.decrypt(text, additionalData(path)); err != nil {
				return nil, fmt.Errorf("at %s: %w", additionalData(path), err)
			}
		}
		if err := mac.add(value); err != nil {
			return nil, fmt.Errorf("at %s: %w", additionalData(path), err)
		}
		return value, nil
	})
	if err != nil {
		return "", err
	}
	return mac.hex(), nil
}

// macAdditionalData is what the MAC is bound to: lastmodified as SOPS
// formats it after parsing it (RFC 3339, whole seconds).
func macAdditionalData(lastModified string) (string, error) {
	t, err := time.Parse(time.RFC3339, lastModified)
	if err != nil {
		return "", fmt.Errorf("the sops metadata's lastmodified is not an RFC 3339 time: %w", err)
	}
	return t.Format(time.RFC3339), nil
}

// checkMAC decrypts a file's stored MAC and compares it with the MAC of
// its decrypted values.
func checkMAC(c *valueCipher, stored, lastModified, computed string) error {
	ad, err := macAdditionalData(lastModified)
	if err != nil {
		return err
	}
	mac, err := c.decrypt(stored, ad)
	if err != nil {
		return fmt.Errorf("decrypting the MAC of a SOPS document: %w", err)
	}
	if mac != computed {
		return errors.New("the SOPS document's MAC does not match its content: it was modified")
	}
	return nil
}
