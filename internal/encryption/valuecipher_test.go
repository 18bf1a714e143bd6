package encryption

import (
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/getsops/sops/v3/aes"
	"github.com/stretchr/testify/require"
)

// The sops library's own value cipher is the oracle: what one encrypts, the
// other decrypts to the same typed value.

func dataKey(t *testing.T) []byte {
	t.Helper()
	key := make([]byte, 32)
	_, err := rand.Read(key)
	require.NoError(t, err)
	return key
}

var typedValues = []struct {
	name  string
	value any
	kind  string
}{
	{"a string", "hunter2", "str"},
	{"a unicode string", "pässwörd ✓", "str"},
	{"an int", 3600, "int"},
	{"a negative int", -42, "int"},
	{"a float", 0.25, "float"},
	{"a whole float", 1e21, "float"},
	{"true", true, "bool"},
	{"false", false, "bool"},
	{"a time", time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), "time"},
}

func TestWhatWeEncryptTheSopsCipherDecrypts(t *testing.T) {
	key := dataKey(t)
	ours, err := newValueCipher(key)
	require.NoError(t, err)
	for _, tt := range typedValues {
		t.Run(tt.name, func(t *testing.T) {
			text, err := ours.encrypt(tt.value, "spec:token:")
			require.NoError(t, err)
			require.True(t, strings.HasPrefix(text, "ENC[AES256_GCM,data:"))
			require.True(t, strings.HasSuffix(text, ",type:"+tt.kind+"]"))
			iv := text[strings.Index(text, ",iv:")+4 : strings.Index(text, ",tag:")]
			raw, err := base64.StdEncoding.DecodeString(iv)
			require.NoError(t, err)
			require.Len(t, raw, 32, "SOPS uses a 32-byte IV")

			got, err := aes.NewCipher().Decrypt(text, key, "spec:token:")
			require.NoError(t, err)
			requireSameValue(t, tt.value, got)

			_, err = aes.NewCipher().Decrypt(text, key, "spec:other:")
			require.Error(t, err, "the path is authenticated: a value moved elsewhere does not decrypt")
		})
	}
}

func TestWhatTheSopsCipherEncryptsWeDecryptAndKeep(t *testing.T) {
	key := dataKey(t)
	for _, tt := range typedValues {
		t.Run(tt.name, func(t *testing.T) {
			text, err := aes.NewCipher().Encrypt(tt.value, key, "data:password:")
			require.NoError(t, err)

			ours, err := newValueCipher(key)
			require.NoError(t, err)
			got, err := ours.decrypt(text, "data:password:")
			require.NoError(t, err)
			requireSameValue(t, tt.value, got)

			again, err := ours.encrypt(got, "data:password:")
			require.NoError(t, err)
			require.Equal(t, text, again, "a value read back is encrypted again with its IV: the same bytes")
			other, err := ours.encrypt(got, "data:username:")
			require.NoError(t, err)
			require.NotEqual(t, text[:40], other[:40], "the same value elsewhere gets its own IV")
		})
	}
}

func requireSameValue(t *testing.T, want, got any) {
	t.Helper()
	if w, ok := want.(time.Time); ok {
		require.IsType(t, time.Time{}, got)
		require.True(t, w.Equal(got.(time.Time)))
		return
	}
	require.Equal(t, want, got)
}

func TestAnEmptyStringStaysEmptyAsSopsLeavesIt(t *testing.T) {
	key := dataKey(t)
	ours, err := newValueCipher(key)
	require.NoError(t, err)
	text, err := ours.encrypt("", "data:empty:")
	require.NoError(t, err)
	sopsText, err := aes.NewCipher().Encrypt("", key, "data:empty:")
	require.NoError(t, err)
	require.Equal(t, sopsText, text)
	got, err := ours.decrypt("", "data:empty:")
	require.NoError(t, err)
	require.Equal(t, "", got)
}

func TestMalformedCiphertextIsRefusedWithoutEchoingIt(t *testing.T) {
	ours, err := newValueCipher(dataKey(t))
	require.NoError(t, err)
	good, err := ours.encrypt("s3cr3t-value", "data:password:")
	require.NoError(t, err)
	tests := map[string]string{
		"plaintext":          "s3cr3t-value",
		"another cipher":     strings.Replace(good, "AES256_GCM", "AES128_GCM", 1),
		"no type":            good[:strings.Index(good, ",type:")] + "]",
		"data not base64":    strings.Replace(good, "data:", "data:!", 1),
		"an unknown type":    strings.Replace(good, "type:str", "type:map", 1),
		"a comment":          strings.Replace(good, "type:str", "type:comment", 1),
		"a flipped data bit": flipData(good),
	}
	for name, text := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := ours.decrypt(text, "data:password:")
			require.Error(t, err)
			require.NotContains(t, err.Error(), "s3cr3t")
		})
	}
}

// flipData changes the first character of an ENC value's data, keeping it
// base64.
func flipData(text string) string {
	i := strings.Index(text, "data:") + len("data:")
	c := byte('A')
	if text[i] == 'A' {
		c = 'B'
	}
	return text[:i] + string(c) + text[i+1:]
}

func TestAValueThatDoesNotDecodeAsItsTypeIsRefusedWithoutEchoingIt(t *testing.T) {
	key := dataKey(t)
	text, err := aes.NewCipher().Encrypt("s3cr3t", key, "spec:ttl:")
	require.NoError(t, err)
	ours, err := newValueCipher(key)
	require.NoError(t, err)

	_, err = ours.decrypt(strings.Replace(text, "type:str", "type:int", 1), "spec:ttl:")
	require.Error(t, err, "the type is not authenticated, but a wrong one does not decode")
	require.NotContains(t, err.Error(), "s3cr3t")
}

func TestAnIVIsNotReusedForBytesOtherThanTheOnesItEncrypted(t *testing.T) {
	// Another tool wrote the int 7 as the bytes "007". The operator writes
	// 7 as "7", so reusing that IV would put two plaintexts under one GCM
	// nonce.
	key := dataKey(t)
	ours, err := newValueCipher(key)
	require.NoError(t, err)
	iv := make([]byte, ivSize)
	_, err = rand.Read(iv)
	require.NoError(t, err)
	gcm, err := cipher.NewGCMWithNonceSize(ours.block, ivSize)
	require.NoError(t, err)
	sealed := gcm.Seal(nil, iv, []byte("007"), []byte("data:count:"))
	enc := base64.StdEncoding.EncodeToString
	theirs := encPrefix + enc(sealed[:len(sealed)-16]) + ",iv:" + enc(iv) + ",tag:" + enc(sealed[len(sealed)-16:]) + ",type:int]"

	value, err := ours.decrypt(theirs, "data:count:")
	require.NoError(t, err)
	require.Equal(t, 7, value)
	again, err := ours.encrypt(value, "data:count:")
	require.NoError(t, err)
	require.NotContains(t, again, ",iv:"+enc(iv)+",", "the IV of 007 is not reused for 7")
}
