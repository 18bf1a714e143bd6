package encryption_test

import (
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
	store := sopsyaml.NewStore(&config.YAMLStoreConfig{Indent: 2})
	branches, err := store.LoadPlainFile([]byte(plaintext))
	require.NoError(t, err)
	key, err := sopsage.MasterKeyFromRecipient(recipient)
	require.NoError(t, err)
	tree := sops.Tree{Branches: branches, Metadata: sops.Metadata{
		KeyGroups: []sops.KeyGroup{{key}}, EncryptedRegex: encryption.SecretEncryptedRegex,
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

func TestTheVersionWrittenIsTheLibrarys(t *testing.T) {
	_, recipient := identity(t)
	out, err := newEncryptor(t, encryption.Keys{Recipients: []string{recipient}}).Encrypt("x", []byte(secretYAML), nil)
	require.NoError(t, err)
	require.Contains(t, string(out), "\n  version: "+version.Version+"\n")
}

func TestAFileTheSopsLibraryWroteIsReadAndKept(t *testing.T) {
	id, recipient := identity(t)
	written := sopsEncrypt(t, secretYAML, recipient)
	e := newEncryptor(t, encryption.Keys{Identities: []string{id}})

	plain, err := e.Decrypt(written)
	require.NoError(t, err)
	require.Equal(t, parse(t, []byte(secretYAML)), parse(t, plain))

	kept, err := e.Encrypt("team-a/db", []byte(secretYAML), written)
	require.NoError(t, err)
	require.Equal(t, string(written), string(kept), "same plaintext, same recipients, same rules: nothing to rewrite")
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
