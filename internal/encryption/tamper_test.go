package encryption_test

import (
	"strings"
	"testing"

	"github.com/getsops/sops/v3/decrypt"
	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/encryption"
)

// encValue returns the ENC[...] value of the line "<indent><key>: ENC[...]".
func encValue(t *testing.T, file, key string) string {
	t.Helper()
	for line := range strings.SplitSeq(file, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), key+": "); ok && strings.HasPrefix(v, "ENC[") {
			return v
		}
	}
	require.Failf(t, "no encrypted value", "key %s", key)
	return ""
}

// flipFirstDataChar changes the first base64 character of an ENC value's
// data: it stays well-formed, its ciphertext changes.
func flipFirstDataChar(enc string) string {
	i := strings.Index(enc, "data:") + len("data:")
	c := "A"
	if enc[i] == 'A' {
		c = "B"
	}
	return enc[:i] + c + enc[i+1:]
}

func TestTamperingIsDetectedByUsAndByTheSopsLibrary(t *testing.T) {
	id, _ := identity(t)
	e := newEncryptor(t, encryption.Keys{Identities: []string{id}})
	out, err := e.Encrypt("team-a/db", []byte(secretYAML), nil)
	require.NoError(t, err)
	file := string(out)
	password, username, mac := encValue(t, file, "password"), encValue(t, file, "username"), encValue(t, file, "mac")
	lastModified := lastModifiedOf(t, file)

	tests := map[string]string{
		"a value's ciphertext":     strings.Replace(file, password, flipFirstDataChar(password), 1),
		"two values swapped":       strings.NewReplacer(password, username, username, password).Replace(file),
		"a readable field":         strings.Replace(file, "  name: db\n", "  name: dc\n", 1),
		"a readable field removed": strings.Replace(file, "type: Opaque\n", "", 1),
		"the MAC":                  strings.Replace(file, mac, flipFirstDataChar(mac), 1),
		"lastmodified":             strings.Replace(file, lastModified, "2027-01-01T00:00:00Z", 1),
	}
	for name, tampered := range tests {
		t.Run(name, func(t *testing.T) {
			require.NotEqual(t, file, tampered, "the test changes the file")

			t.Setenv("SOPS_AGE_KEY", id)
			_, err := decrypt.Data([]byte(tampered), "yaml")
			require.Error(t, err, "the sops library refuses it")

			_, err = e.Decrypt([]byte(tampered))
			require.Error(t, err, "we refuse it")
			require.NotContains(t, err.Error(), "aHVudGVyMg==", "no plaintext in the error")
		})
	}
}

// lastModifiedOf returns the time in a file's lastmodified line.
func lastModifiedOf(t *testing.T, file string) string {
	t.Helper()
	_, rest, ok := strings.Cut(file, "  lastmodified: \"")
	require.True(t, ok)
	at, _, ok := strings.Cut(rest, "\"")
	require.True(t, ok)
	return at
}

func TestTheMACIsBoundToTheInstantOfLastModifiedAsSopsReadsIt(t *testing.T) {
	id, _ := identity(t)
	e := newEncryptor(t, encryption.Keys{Identities: []string{id}})
	out, err := e.Encrypt("team-a/db", []byte(secretYAML), nil)
	require.NoError(t, err)
	at := lastModifiedOf(t, string(out))
	// sops parses lastmodified and formats it again: fractional seconds
	// written by another tool do not count.
	fractional := strings.Replace(string(out), at, strings.TrimSuffix(at, "Z")+".000Z", 1)

	require.Equal(t, parse(t, []byte(secretYAML)), sopsDecrypt(t, id, []byte(fractional)))
	plain, err := e.Decrypt([]byte(fractional))
	require.NoError(t, err)
	require.Equal(t, parse(t, []byte(secretYAML)), parse(t, plain))
}
