package encryption_test

import (
	"strings"
	"testing"
	"time"

	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/aes"
	sopsage "github.com/getsops/sops/v3/age"
	"github.com/getsops/sops/v3/config"
	sopsyaml "github.com/getsops/sops/v3/stores/yaml"
	"github.com/getsops/sops/v3/version"
	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/encryption"
)

// sopsEncrypt encrypts plaintext the way the sops CLI does, through the
// library's own YAML store.
func sopsEncrypt(t *testing.T, plaintext, recipient string) []byte {
	t.Helper()
	return sopsEncryptWithRegex(t, plaintext, recipient, encryption.SecretEncryptedRegex)
}

func TestTheVersionWrittenIsTheLibrarys(t *testing.T) {
	_, recipient := identity(t)
	out, err := newEncryptor(t, encryption.Keys{Recipients: []string{recipient}}).Encrypt("x", []byte(secretYAML), nil)
	require.NoError(t, err)
	require.Contains(t, string(out), "\n  version: "+version.Version+"\n")
}

func TestAFileTheSopsLibraryWroteIsReadAndRewrittenOnceUnderTheDerivedKey(t *testing.T) {
	id, recipient := identity(t)
	written := sopsEncrypt(t, secretYAML, recipient)
	e := newEncryptor(t, encryption.Keys{Identities: []string{id}})

	plain, err := e.Decrypt(written)
	require.NoError(t, err)
	require.Equal(t, parse(t, []byte(secretYAML)), parse(t, plain))

	rewritten, err := e.Encrypt("team-a/db", []byte(secretYAML), written)
	require.NoError(t, err)
	require.NotEqual(t, string(written), string(rewritten), "a data key the operator did not derive is never reused")
	require.Equal(t, parse(t, []byte(secretYAML)), sopsDecrypt(t, id, rewritten))

	fresh := newEncryptor(t, encryption.Keys{Identities: []string{id}}) // as after a restart
	kept, err := fresh.Encrypt("team-a/db", []byte(secretYAML), rewritten)
	require.NoError(t, err)
	require.Equal(t, string(rewritten), string(kept), "from then on the file is the operator's own and stays as it is")
}

func TestKeysAndValuesYAMLWouldRetypeSurviveTheRoundTrip(t *testing.T) {
	id, _ := identity(t)
	e := newEncryptor(t, encryption.Keys{Identities: []string{id}})
	doc := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: odd\n  labels:\n    \"on\": \"yes\"\n    \"123\": \"true\"\n" +
		"data:\n  \"123\": MTIz\n  \"true\": dHJ1ZQ==\n  \"null\": \"\"\n"

	out, err := e.Encrypt("odd", []byte(doc), nil)
	require.NoError(t, err)

	require.Equal(t, parse(t, []byte(doc)), sopsDecrypt(t, id, out))
	again, err := newEncryptor(t, encryption.Keys{Identities: []string{id}}).Encrypt("odd", []byte(doc), out)
	require.NoError(t, err)
	require.Equal(t, string(out), string(again))
}

// A custom resource with every kind of value SOPS types, nested mappings
// and sequences, a null and an empty string.
const typedYAML = `apiVersion: example.com/v1
kind: Vault
metadata:
  name: keys
  namespace: team-a
spec:
  token: s.plaintext-token
  ttl: 3600
  offset: -5
  ratio: 0.75
  enabled: true
  disabled: false
  nothing: null
  empty: ""
  hosts:
    - a.example.com
    - b.example.com
  nested:
    deep:
      port: 5432
      "on": "yes"
  items:
    - name: one
      secret: x
    - name: two
      secret: y
`

// sopsReencrypt reads a file with the sops library, decrypts it, checks
// its MAC, and encrypts it again as `sops edit` does when nothing changed:
// the same data key, each value with the IV it had, the same lastmodified.
func sopsReencrypt(t *testing.T, identityFile string, file []byte) []byte {
	t.Helper()
	t.Setenv("SOPS_AGE_KEY", identityFile)
	store := sopsyaml.NewStore(&config.YAMLStoreConfig{Indent: 2})
	tree, err := store.LoadEncryptedFile(file)
	require.NoError(t, err)
	dataKey, err := tree.Metadata.GetDataKey()
	require.NoError(t, err)
	cipher := aes.NewCipher()
	mac, err := tree.Decrypt(dataKey, cipher)
	require.NoError(t, err)
	lastModified := tree.Metadata.LastModified.Format(time.RFC3339)
	stored, err := cipher.Decrypt(tree.Metadata.MessageAuthenticationCode, dataKey, lastModified)
	require.NoError(t, err)
	require.Equal(t, mac, stored, "the sops library computes the MAC we stored")

	again, err := tree.Encrypt(dataKey, cipher)
	require.NoError(t, err)
	tree.Metadata.MessageAuthenticationCode, err = cipher.Encrypt(again, dataKey, lastModified)
	require.NoError(t, err)
	out, err := store.EmitEncryptedFile(tree)
	require.NoError(t, err)
	return out
}

func TestTheSopsLibraryReEncryptsOurFileToTheSameCiphertexts(t *testing.T) {
	id, _ := identity(t)
	e := newEncryptor(t, encryption.Keys{Identities: []string{id}})
	for name, doc := range map[string]string{"a Secret": secretYAML, "typed values": typedYAML} {
		t.Run(name, func(t *testing.T) {
			ours, err := e.Encrypt(name, []byte(doc), nil)
			require.NoError(t, err)

			theirs := sopsReencrypt(t, id, ours)

			require.Equal(t, parse(t, ours), parse(t, theirs),
				"every ciphertext, the MAC and the metadata are what the sops library writes for the same key and IVs")
			if doc == secretYAML {
				// Byte for byte too; only keys YAML 1.1 reads as booleans
				// ("on") are quoted by the sops store and not by us.
				require.Equal(t, string(ours), string(theirs))
			}
			require.Equal(t, parse(t, []byte(doc)), sopsDecrypt(t, id, ours))
		})
	}
}

func TestTypedValuesRoundTripThroughTheSopsLibraryAndUs(t *testing.T) {
	id, recipient := identity(t)
	// The same value twice at one path (sequence items share their path).
	doc := typedYAML + "  again:\n    - x\n    - x\n"
	e := newEncryptor(t, encryption.Keys{Identities: []string{id}})

	ours, err := e.Encrypt("team-a/keys", []byte(doc), nil)
	require.NoError(t, err)
	require.NotContains(t, string(ours), "s.plaintext-token")
	require.Contains(t, string(ours), "  nothing: null\n", "a null is no value to SOPS: it stays")
	require.Contains(t, string(ours), "  empty: \"\"\n", "an empty string stays empty, as SOPS leaves it")
	require.Equal(t, parse(t, []byte(doc)), sopsDecrypt(t, id, ours))
	plain, err := e.Decrypt(ours)
	require.NoError(t, err)
	require.Equal(t, parse(t, []byte(doc)), parse(t, plain))

	theirs := sopsEncryptWithRegex(t, doc, recipient, "^(data|spec|stringData)$")
	plain, err = e.Decrypt(theirs)
	require.NoError(t, err)
	require.Equal(t, parse(t, []byte(doc)), parse(t, plain))
	rewritten, err := e.Encrypt("team-a/keys", []byte(doc), theirs)
	require.NoError(t, err)
	require.Equal(t, parse(t, []byte(doc)), sopsDecrypt(t, id, rewritten))
	kept, err := newEncryptor(t, encryption.Keys{Identities: []string{id}}).Encrypt("team-a/keys", []byte(doc), rewritten)
	require.NoError(t, err)
	require.Equal(t, string(rewritten), string(kept))
}

// sopsEncryptWithRegex encrypts plaintext the way the sops CLI does, through
// the library's own YAML store, with the given encrypted_regex.
func sopsEncryptWithRegex(t *testing.T, plaintext, recipient, regex string) []byte {
	t.Helper()
	store := sopsyaml.NewStore(&config.YAMLStoreConfig{Indent: 2})
	branches, err := store.LoadPlainFile([]byte(plaintext))
	require.NoError(t, err)
	key, err := sopsage.MasterKeyFromRecipient(recipient)
	require.NoError(t, err)
	tree := sops.Tree{Branches: branches, Metadata: sops.Metadata{
		KeyGroups: []sops.KeyGroup{{key}}, EncryptedRegex: regex,
		Version: version.Version, LastModified: time.Now().UTC().Truncate(time.Second),
	}}
	dataKey, errs := tree.GenerateDataKey()
	require.Empty(t, errs)
	cipher := aes.NewCipher()
	mac, err := tree.Encrypt(dataKey, cipher)
	require.NoError(t, err)
	tree.Metadata.MessageAuthenticationCode, err = cipher.Encrypt(mac, dataKey, tree.Metadata.LastModified.Format(time.RFC3339))
	require.NoError(t, err)
	out, err := store.EmitEncryptedFile(tree)
	require.NoError(t, err)
	return out
}

func TestAPlantedFileWhoseKeyTheOperatorDidNotDeriveIsNotReused(t *testing.T) {
	// Anyone who can push knows the public recipient (.sops.yaml names it)
	// and can wrap a data key of their own to it: such a file opens with the
	// operator's identity and its MAC checks out.
	id, recipient := identity(t)
	planted := sopsEncrypt(t, secretYAML, recipient)
	real := strings.Replace(secretYAML, "aHVudGVyMg==", "cmVhbC12YWx1ZQ==", 1)

	out, err := newEncryptor(t, encryption.Keys{Identities: []string{id}}).Encrypt("team-a/db", []byte(real), planted)
	require.NoError(t, err)

	require.Equal(t, parse(t, []byte(real)), sopsDecrypt(t, id, out))
	before, after := parse(t, planted), parse(t, out)
	data := func(doc map[string]any) map[string]any { return doc["data"].(map[string]any) }
	meta := func(doc map[string]any) map[string]any { return doc["sops"].(map[string]any) }
	require.NotEqual(t, meta(before)["age"], meta(after)["age"], "the planted data key is not reused")
	require.NotEqual(t, data(before)["username"], data(after)["username"], "no IV of the planted file is reused either")
}
