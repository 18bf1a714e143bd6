package branch

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
)

// aeadSealer seals with AES-256-GCM: a random nonce before the ciphertext.
type aeadSealer struct{ aead cipher.AEAD }

// NewAEADSealer is a JournalSealer with a 32-byte key that every replica
// shares (a Secret the chart mounts), so a new owner opens what the old
// one sealed. Redis then holds no sensitive object in clear.
func NewAEADSealer(key []byte) (JournalSealer, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("the journal key has %d bytes; AES-256 takes 32", len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("the journal key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("the journal key: %w", err)
	}
	return aeadSealer{aead: aead}, nil
}

func (s aeadSealer) Seal(plaintext []byte) ([]byte, error) {
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(plaintext)+s.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("drawing a nonce: %w", err)
	}
	return s.aead.Seal(nonce, nonce, plaintext, nil), nil
}

func (s aeadSealer) Open(sealed []byte) ([]byte, error) {
	n := s.aead.NonceSize()
	if len(sealed) < n {
		return nil, errors.New("a sealed journal write shorter than its nonce")
	}
	plain, err := s.aead.Open(nil, sealed[:n], sealed[n:], nil)
	if err != nil {
		return nil, fmt.Errorf("opening a sealed journal write (another journal key?): %w", err)
	}
	return plain, nil
}
