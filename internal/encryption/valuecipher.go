package encryption

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The value cipher of the SOPS file format: every encrypted value is
// AES-256-GCM under the file's data key, with a 32-byte random IV (SOPS
// uses GCM with a 32-byte nonce, not the usual 12) and the value's path as
// additional data, so a ciphertext cannot be moved to another key. It is
// written as
//
//	ENC[AES256_GCM,data:<base64>,iv:<base64>,tag:<base64>,type:<type>]
//
// where data is the ciphertext without the 16-byte GCM tag and type says
// how the plaintext bytes decode (see encodeValue).

const (
	ivSize    = 32
	encPrefix = "ENC[AES256_GCM,data:"
	encSuffix = "]"
)

// valueCipher encrypts and decrypts the values of one file. It remembers
// the IV of every value it decrypts, so encrypting the same value at the
// same path again gives the same ciphertext, as `sops edit` does: an
// unchanged value keeps its bytes in Git.
type valueCipher struct {
	block cipher.Block
	ivs   map[ivKey][]byte
}

// ivKey is a value as the IV memory knows it: where it is and what it is.
type ivKey struct {
	additionalData string
	kind           string
	plaintext      string
}

func newValueCipher(dataKey []byte) (*valueCipher, error) {
	block, err := aes.NewCipher(dataKey)
	if err != nil {
		return nil, fmt.Errorf("using the data key for AES: %w", err)
	}
	return &valueCipher{block: block, ivs: map[ivKey][]byte{}}, nil
}

// encrypt returns value's ENC[...] string. An empty string stays empty, as
// SOPS leaves it.
func (c *valueCipher) encrypt(value any, additionalData string) (string, error) {
	kind, plain, err := encodeValue(value)
	if err != nil {
		return "", err
	}
	if len(plain) == 0 && kind == "str" {
		return "", nil
	}
	iv, ok := c.ivs[ivKey{additionalData, kind, string(plain)}]
	if !ok {
		iv = make([]byte, ivSize)
		if _, err := rand.Read(iv); err != nil {
			return "", fmt.Errorf("generating an IV: %w", err)
		}
	}
	gcm, err := cipher.NewGCMWithNonceSize(c.block, ivSize)
	if err != nil {
		return "", fmt.Errorf("setting up AES-GCM: %w", err)
	}
	sealed := gcm.Seal(nil, iv, plain, []byte(additionalData))
	data, tag := sealed[:len(sealed)-gcm.Overhead()], sealed[len(sealed)-gcm.Overhead():]
	enc := base64.StdEncoding.EncodeToString
	return encPrefix + enc(data) + ",iv:" + enc(iv) + ",tag:" + enc(tag) + ",type:" + kind + encSuffix, nil
}

// decrypt reads an ENC[...] string back into a typed value and remembers
// its IV. An empty string is an empty value.
func (c *valueCipher) decrypt(text, additionalData string) (any, error) {
	if text == "" {
		return "", nil
	}
	data, iv, tag, kind, err := parseEncrypted(text)
	if err != nil {
		return nil, err
	}
	// The IV's own length, as SOPS reads it: another tool's file may use
	// another nonce size.
	gcm, err := cipher.NewGCMWithNonceSize(c.block, len(iv))
	if err != nil {
		return nil, fmt.Errorf("setting up AES-GCM: %w", err)
	}
	plain, err := gcm.Open(nil, iv, append(data, tag...), []byte(additionalData))
	if err != nil {
		return nil, fmt.Errorf("decrypting a value: %w", err)
	}
	value, err := decodeValue(kind, plain)
	if err != nil {
		return nil, err
	}
	// Only an IV encrypt can use again is remembered, under the value
	// encoded again, which is how encrypt will look it up, and only when
	// that encoding gives back exactly the bytes this IV encrypted: another
	// tool's "007" or "true" decodes to a value encrypt writes as "7" or
	// "True", and reusing a GCM IV on other bytes would leak both.
	if again, reencoded, err := encodeValue(value); err == nil && again == kind && bytes.Equal(reencoded, plain) && len(iv) == ivSize {
		c.ivs[ivKey{additionalData, kind, string(plain)}] = iv
	}
	return value, nil
}

// parseEncrypted splits an ENC[...] string into its parts.
func parseEncrypted(text string) (data, iv, tag []byte, kind string, err error) {
	rest, ok := strings.CutPrefix(text, encPrefix)
	rest, ok2 := strings.CutSuffix(rest, encSuffix)
	if !ok || !ok2 {
		return nil, nil, nil, "", errors.New("an encrypted value is not in the ENC[AES256_GCM,...] format")
	}
	var fields [4]string
	fields[0], rest, ok = strings.Cut(rest, ",iv:")
	fields[1], rest, ok2 = strings.Cut(rest, ",tag:")
	var ok3 bool
	fields[2], fields[3], ok3 = strings.Cut(rest, ",type:")
	if !ok || !ok2 || !ok3 {
		return nil, nil, nil, "", errors.New("an encrypted value lacks its iv, tag or type")
	}
	var parts [3][]byte
	for i, name := range []string{"data", "iv", "tag"} {
		if parts[i], err = base64.StdEncoding.DecodeString(fields[i]); err != nil || len(parts[i]) == 0 {
			return nil, nil, nil, "", fmt.Errorf("an encrypted value's %s is not base64", name)
		}
	}
	return parts[0], parts[1], parts[2], fields[3], nil
}

// encodeValue is the typed plaintext encoding SOPS uses, for the cipher
// and for the MAC: the bytes of a string, decimal integers, floats in
// their shortest form without exponent, booleans as Python writes them
// (True, False), times as RFC 3339 text.
func encodeValue(value any) (kind string, plain []byte, err error) {
	switch v := value.(type) {
	case string:
		return "str", []byte(v), nil
	case int:
		return "int", []byte(strconv.Itoa(v)), nil
	case float64:
		return "float", []byte(strconv.FormatFloat(v, 'f', -1, 64)), nil
	case bool:
		if v {
			return "bool", []byte("True"), nil
		}
		return "bool", []byte("False"), nil
	case time.Time:
		text, err := v.MarshalText()
		if err != nil {
			return "", nil, fmt.Errorf("encoding a timestamp: %w", err)
		}
		return "time", text, nil
	}
	// The type only: the value may be secret.
	return "", nil, fmt.Errorf("a %T value has no SOPS encoding", value)
}

// decodeValue is encodeValue's inverse. bytes (which the sops CLI writes
// for binary files) reads as a string of the same bytes; a comment has no
// place as a value in the YAML the operator reads (it parses no
// comments), and is refused.
func decodeValue(kind string, plain []byte) (any, error) {
	var value any
	var err error
	switch kind {
	case "str", "bytes":
		value = string(plain)
	case "int":
		value, err = strconv.Atoi(string(plain))
	case "float":
		value, err = strconv.ParseFloat(string(plain), 64)
	case "bool":
		value, err = strconv.ParseBool(string(plain))
	case "time":
		var t time.Time
		err = t.UnmarshalText(plain)
		value = t
	default:
		return nil, fmt.Errorf("an encrypted value has the type %q, which the operator does not read", kind)
	}
	if err != nil {
		// Not wrapped: strconv's errors quote the plaintext.
		return nil, fmt.Errorf("an encrypted value does not decode as its type %s", kind)
	}
	return value, nil
}
