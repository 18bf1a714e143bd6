package encryption_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/getsops/sops/v3/config"
	"github.com/getsops/sops/v3/decrypt"
	"github.com/stretchr/testify/require"
	yaml "go.yaml.in/yaml/v3"

	"github.com/configbutler/gitops-reverser/internal/encryption"
)

const secretYAML = `apiVersion: v1
kind: Secret
metadata:
  name: db
  namespace: team-a
  labels:
    app: db
data:
  password: aHVudGVyMg==
  username: YWRtaW4=
type: Opaque
`

// identity makes an age identity file and its recipient.
func identity(t *testing.T) (file, recipient string) {
	t.Helper()
	file, recipient, err := encryption.GenerateIdentity(time.Now())
	require.NoError(t, err)
	return file, recipient
}

// clock returns a Now that moves one minute per call, so lastmodified
// always changes when a file is encrypted again.
func clock() func() time.Time {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return func() time.Time {
		at = at.Add(time.Minute)
		return at
	}
}

func newEncryptor(t *testing.T, keys encryption.Keys) *encryption.Encryptor {
	t.Helper()
	e, err := encryption.New(keys)
	require.NoError(t, err)
	e.Now = clock()
	return e
}

// sopsDecrypt decrypts with the sops library's own entry point (as `sops
// -d` does), the identity given through the environment.
func sopsDecrypt(t *testing.T, identityFile string, ciphertext []byte) map[string]any {
	t.Helper()
	t.Setenv("SOPS_AGE_KEY", identityFile)
	plain, err := decrypt.Data(ciphertext, "yaml")
	require.NoError(t, err)
	return parse(t, plain)
}

func parse(t *testing.T, doc []byte) map[string]any {
	t.Helper()
	var out map[string]any
	require.NoError(t, yaml.Unmarshal(doc, &out))
	return out
}

func TestASecretRoundTripsThroughTheSopsLibrary(t *testing.T) {
	id, recipient := identity(t)
	e := newEncryptor(t, encryption.Keys{Identities: []string{id}})

	out, err := e.Encrypt("team-a/db", []byte(secretYAML), nil)
	require.NoError(t, err)

	text := string(out)
	require.NotContains(t, text, "aHVudGVyMg==")
	require.NotContains(t, text, "YWRtaW4=")
	require.Contains(t, text, "\n  password: ENC[AES256_GCM,")
	require.Contains(t, text, "  name: db\n", "metadata stays readable: the planner finds the object by it")
	require.Contains(t, text, "type: Opaque\n", "a Secret's type stays readable")
	require.Contains(t, text, "recipient: "+recipient)
	require.Contains(t, text, "encrypted_regex: ^(data|stringData)$")
	require.Equal(t, parse(t, []byte(secretYAML)), sopsDecrypt(t, id, out))

	plain, err := e.Decrypt(out)
	require.NoError(t, err)
	require.Equal(t, parse(t, []byte(secretYAML)), parse(t, plain))
}

func TestAnUnchangedObjectKeepsItsBytes(t *testing.T) {
	id, _ := identity(t)
	first := newEncryptor(t, encryption.Keys{Identities: []string{id}})
	existing, err := first.Encrypt("team-a/db", []byte(secretYAML), nil)
	require.NoError(t, err)

	again, err := first.Encrypt("team-a/db", []byte(secretYAML), existing)
	require.NoError(t, err)
	require.Equal(t, string(existing), string(again))

	// A restart: a new Encryptor with an empty cache reads the file back.
	restarted := newEncryptor(t, encryption.Keys{Identities: []string{id}})
	replayed, err := restarted.Encrypt("team-a/db", []byte(secretYAML), existing)
	require.NoError(t, err)
	require.Equal(t, string(existing), string(replayed))

	// Formatting does not count: the same object rendered differently.
	reformatted := strings.Replace(secretYAML, "password: aHVudGVyMg==", "password: \"aHVudGVyMg==\"", 1)
	replayed, err = restarted.Encrypt("team-a/db", []byte(reformatted), existing)
	require.NoError(t, err)
	require.Equal(t, string(existing), string(replayed))
}

func TestAChangedValueChangesOnlyItsCiphertextTheMacAndLastModified(t *testing.T) {
	id, _ := identity(t)
	now := clock()
	e := newEncryptor(t, encryption.Keys{Identities: []string{id}})
	e.Now = now
	before, err := e.Encrypt("team-a/db", []byte(secretYAML), nil)
	require.NoError(t, err)

	changed := strings.Replace(secretYAML, "aHVudGVyMg==", "aHVudGVyMw==", 1)
	restarted := newEncryptor(t, encryption.Keys{Identities: []string{id}})
	restarted.Now = now
	after, err := restarted.Encrypt("team-a/db", []byte(changed), before)
	require.NoError(t, err)

	require.ElementsMatch(t, []string{"password:", "lastmodified:", "mac:"}, changedLines(before, after))
	require.Equal(t, parse(t, []byte(changed)), sopsDecrypt(t, id, after))
}

func TestAChangedLabelChangesOnlyThatLineTheMacAndLastModified(t *testing.T) {
	id, _ := identity(t)
	e := newEncryptor(t, encryption.Keys{Identities: []string{id}})
	before, err := e.Encrypt("team-a/db", []byte(secretYAML), nil)
	require.NoError(t, err)

	after, err := e.Encrypt("team-a/db", []byte(strings.Replace(secretYAML, "app: db", "app: database", 1)), before)
	require.NoError(t, err)

	require.ElementsMatch(t, []string{"app:", "lastmodified:", "mac:"}, changedLines(before, after))
}

// changedLines lists the first word of every line that differs between
// two renderings of the same shape.
func changedLines(a, b []byte) []string {
	x, y := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	var out []string
	for i := range min(len(x), len(y)) {
		if x[i] != y[i] {
			out = append(out, strings.Fields(x[i])[0])
		}
	}
	if len(x) != len(y) {
		out = append(out, "line count")
	}
	return out
}

func TestWithoutAnIdentityTheCacheKeepsOutputStableInProcess(t *testing.T) {
	id, recipient := identity(t)
	e := newEncryptor(t, encryption.Keys{Recipients: []string{recipient}})
	require.False(t, e.CanDecrypt())

	first, err := e.Encrypt("team-a/db", []byte(secretYAML), nil)
	require.NoError(t, err)
	again, err := e.Encrypt("team-a/db", []byte(secretYAML), first)
	require.NoError(t, err)
	require.Equal(t, string(first), string(again), "the same plaintext is not encrypted again")
	replanned, err := e.Encrypt("team-a/db", []byte(secretYAML), nil)
	require.NoError(t, err)
	require.Equal(t, string(first), string(replanned), "a re-plan on another head writes the same bytes")

	changed, err := e.Encrypt("team-a/db", []byte(strings.Replace(secretYAML, "YWRtaW4=", "cm9vdA==", 1)), first)
	require.NoError(t, err)
	require.NotEqual(t, string(first), string(changed))
	require.Equal(t, "cm9vdA==", sopsDecrypt(t, id, changed)["data"].(map[string]any)["username"])
}

func TestANewRecipientReEncryptsAnUnchangedObject(t *testing.T) {
	id, _ := identity(t)
	other, otherRecipient := identity(t)
	before, err := newEncryptor(t, encryption.Keys{Identities: []string{id}}).Encrypt("team-a/db", []byte(secretYAML), nil)
	require.NoError(t, err)

	widened := newEncryptor(t, encryption.Keys{Identities: []string{id}, Recipients: []string{otherRecipient}})
	after, err := widened.Encrypt("team-a/db", []byte(secretYAML), before)
	require.NoError(t, err)

	require.NotEqual(t, string(before), string(after))
	require.Equal(t, parse(t, []byte(secretYAML)), sopsDecrypt(t, other, after), "the new recipient can read it")
	require.Equal(t, parse(t, []byte(secretYAML)), sopsDecrypt(t, id, after))
}

func TestATamperedFileIsReplaced(t *testing.T) {
	id, _ := identity(t)
	e := newEncryptor(t, encryption.Keys{Identities: []string{id}})
	existing, err := e.Encrypt("team-a/db", []byte(secretYAML), nil)
	require.NoError(t, err)
	tampered := strings.Replace(string(existing), "  password: ENC[", "  password: XENC[", 1)

	out, err := newEncryptor(t, encryption.Keys{Identities: []string{id}}).Encrypt("team-a/db", []byte(secretYAML), []byte(tampered))
	require.NoError(t, err, "a file that cannot be read back is replaced, not an error")
	require.NotEqual(t, tampered, string(out))
	require.Equal(t, parse(t, []byte(secretYAML)), sopsDecrypt(t, id, out))
}

func TestASensitiveCustomResourceEncryptsEveryFieldButItsIdentity(t *testing.T) {
	id, _ := identity(t)
	e := newEncryptor(t, encryption.Keys{Identities: []string{id}})
	cr := "apiVersion: example.com/v1\nkind: Vault\nmetadata:\n  name: keys\n  namespace: team-a\nspec:\n  token: s.plaintext-token\n  ttl: 3600\n"

	out, err := e.Encrypt("team-a/keys", []byte(cr), nil)
	require.NoError(t, err)

	require.NotContains(t, string(out), "s.plaintext-token")
	require.NotContains(t, string(out), "3600")
	require.Contains(t, string(out), "encrypted_regex: ^(data|spec|stringData)$")
	require.Contains(t, string(out), "kind: Vault\n")
	require.Equal(t, parse(t, []byte(cr)), sopsDecrypt(t, id, out))
}

func TestRecipientsComeFromTheSpecAndTheIdentities(t *testing.T) {
	id, fromIdentity := identity(t)
	_, fromSpec := identity(t)

	e := newEncryptor(t, encryption.Keys{Recipients: []string{fromSpec, " " + fromIdentity}, Identities: []string{id}})

	want := []string{fromIdentity, fromSpec}
	if want[0] > want[1] {
		want[0], want[1] = want[1], want[0]
	}
	require.Equal(t, want, e.Recipients(), "sorted and without duplicates")
	require.True(t, e.CanDecrypt())
	same := newEncryptor(t, encryption.Keys{Recipients: []string{fromIdentity, fromSpec}, Identities: []string{id}})
	require.Equal(t, e.Fingerprint(), same.Fingerprint())
	recipientsOnly := newEncryptor(t, encryption.Keys{Recipients: []string{fromIdentity, fromSpec}})
	require.NotEqual(t, e.Fingerprint(), recipientsOnly.Fingerprint(), "holding an identity counts")
}

func TestBadKeysAreRefusedWithoutEchoingSecrets(t *testing.T) {
	id, _ := identity(t)
	secretLine := strings.Split(strings.TrimSpace(id), "\n")[2]
	broken := secretLine[:len(secretLine)-4] + "QQQQ"
	tests := []struct {
		name string
		keys encryption.Keys
		want string
	}{
		{"no key at all", encryption.Keys{}, "no age recipient"},
		{"a recipient that is not an age key", encryption.Keys{Recipients: []string{"age1notakey"}}, `recipient 1 ("age1notakey"): not an age public key`},
		{"an SSH recipient", encryption.Keys{Recipients: []string{"ssh-ed25519 AAAA"}}, "recipient 1"},
		{"a corrupt identity", encryption.Keys{Identities: []string{"# my key\n" + broken + "\n"}}, "identity file 1: line 2 is not an age identity"},
		{"an identity file without identities", encryption.Keys{Identities: []string{"# nothing here\n"}}, "identity file 1: no age identity"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := encryption.New(tt.keys)
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.want)
			require.NotContains(t, err.Error(), secretLine[:20], "identity material never appears in an error")
		})
	}
}

func TestPlaintextThatIsNotOneDocumentIsRefused(t *testing.T) {
	_, recipient := identity(t)
	e := newEncryptor(t, encryption.Keys{Recipients: []string{recipient}})
	for _, bad := range []string{secretYAML + "---\n" + secretYAML, "a: [unclosed\n", "sops: {}\nkind: Secret\n"} {
		_, err := e.Encrypt("x", []byte(bad), nil)
		require.Error(t, err)
	}
}

func TestTheSopsConfigNamesTheRecipients(t *testing.T) {
	_, a := identity(t)
	_, b := identity(t)
	e := newEncryptor(t, encryption.Keys{Recipients: []string{a, b}})
	dir := t.TempDir()
	path := filepath.Join(dir, ".sops.yaml")
	require.NoError(t, os.WriteFile(path, e.SopsConfig(), 0o600))

	rule, err := config.LoadCreationRuleForFile(path, filepath.Join(dir, "team-a", "secrets", "db.sops.yaml"), nil)
	require.NoError(t, err)

	require.Equal(t, encryption.SecretEncryptedRegex, rule.EncryptedRegex)
	require.Len(t, rule.KeyGroups, 1)
	var got []string
	for _, k := range rule.KeyGroups[0] {
		got = append(got, k.ToString())
	}
	require.ElementsMatch(t, []string{a, b}, got)
}

func TestASensitiveObjectWithATopLevelNameFieldIsRefusedClearly(t *testing.T) {
	_, recipient := identity(t)
	e := newEncryptor(t, encryption.Keys{Recipients: []string{recipient}})
	doc := "apiVersion: example.com/v1\nkind: Credential\nmetadata:\n  name: db\n  namespace: team-a\nname: admin\n"
	_, err := e.Encrypt("team-a/db", []byte(doc), nil)
	require.ErrorContains(t, err, `top-level field "name"`)
	require.NotContains(t, err.Error(), "admin", "the value is not echoed")
}

// TestATreeEncryptsAsItsTextDoes: handed the plaintext's tree, the
// Encryptor writes what it writes of the text: a document that decrypts to
// it, the same file for an unchanged object, and only the changed value's
// ciphertext changed for a changed one.
func TestATreeEncryptsAsItsTextDoes(t *testing.T) {
	id, _ := identity(t)
	now := clock()
	var doc yaml.Node
	require.NoError(t, yaml.Unmarshal([]byte(secretYAML), &doc))
	fromText := newEncryptor(t, encryption.Keys{Identities: []string{id}})
	fromText.Now = now
	fromTree := newEncryptor(t, encryption.Keys{Identities: []string{id}})
	fromTree.Now = now

	existing, err := fromText.Encrypt("team-a/db", []byte(secretYAML), nil)
	require.NoError(t, err)
	withTree, err := fromTree.EncryptTree("team-a/db", []byte(secretYAML), doc.Content[0], nil)
	require.NoError(t, err)
	require.Equal(t, parse(t, []byte(secretYAML)), sopsDecrypt(t, id, withTree))

	restarted := newEncryptor(t, encryption.Keys{Identities: []string{id}})
	again, err := restarted.EncryptTree("team-a/db", []byte(secretYAML), doc.Content[0], existing)
	require.NoError(t, err)
	require.Equal(t, string(existing), string(again))

	changed := strings.Replace(secretYAML, "aHVudGVyMg==", "aHVudGVyMw==", 1)
	var changedDoc yaml.Node
	require.NoError(t, yaml.Unmarshal([]byte(changed), &changedDoc))
	restarted.Now = now
	viaTree, err := restarted.EncryptTree("team-a/db", []byte(changed), changedDoc.Content[0], existing)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"password:", "lastmodified:", "mac:"}, changedLines(existing, viaTree))
	require.Equal(t, parse(t, []byte(changed)), sopsDecrypt(t, id, viaTree))
}
