package e2e

import (
	"context"
	"encoding/base64"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	yaml "go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/encryption"
	"github.com/configbutler/gitops-reverser/internal/operator"
	"github.com/configbutler/gitops-reverser/test/harness"
)

// ageKey is an age identity file and its recipient.
type ageKey struct{ file, recipient string }

func newAgeKey(t *testing.T) ageKey {
	t.Helper()
	file, recipient, err := encryption.GenerateIdentity(time.Now())
	require.NoError(t, err)
	return ageKey{file: file, recipient: recipient}
}

// encrypt sets the mirror's GitTarget spec.encryption.
func encrypt(t *testing.T, m mirrorSetup, age v1alpha3.AgeEncryption) {
	t.Helper()
	gt := v1alpha3.GitTarget{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: m.target}}
	edit(t, &gt, func() { gt.Spec.Encryption = &v1alpha3.EncryptionSpec{Age: age} })
}

func ageKeySecret(ns, name string, key ageKey) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Data: map[string][]byte{"age.agekey": []byte(key.file)}}
}

// sopsCLI is the sops binary built from the same version as the library.
func sopsCLI(t *testing.T) string {
	t.Helper()
	path, err := harness.BinaryPath("sops", harness.SopsVersion)
	require.NoError(t, err)
	return path
}

// checkout clones a repository into a temporary directory.
func checkout(t *testing.T, repo string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), repo)
	out, err := exec.Command("git", "clone", "--quiet", env.git.RepoPath(repo), dir).CombinedOutput()
	require.NoError(t, err, "%s", out)
	return dir
}

// sopsDecrypt runs `sops -d file` in dir with the age identity, as a user
// with a checkout would, and parses the result.
func sopsDecrypt(t *testing.T, dir, file string, key ageKey) map[string]any {
	t.Helper()
	keyFile := filepath.Join(t.TempDir(), "key.txt")
	require.NoError(t, os.WriteFile(keyFile, []byte(key.file), 0o600))
	cmd := exec.Command(sopsCLI(t), "-d", file)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SOPS_AGE_KEY_FILE="+keyFile)
	out, err := cmd.Output()
	require.NoError(t, err, "sops -d %s: %v", file, stderrOf(err))
	var doc map[string]any
	require.NoError(t, yaml.Unmarshal(out, &doc))
	return doc
}

func stderrOf(err error) string {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return string(exit.Stderr)
	}
	return ""
}

func decodedData(t *testing.T, doc map[string]any, key string) string {
	t.Helper()
	data, ok := doc["data"].(map[string]any)
	require.True(t, ok, "the decrypted Secret has data: %v", doc)
	raw, err := base64.StdEncoding.DecodeString(data[key].(string))
	require.NoError(t, err)
	return string(raw)
}

// TestASecretIsEncryptedAndTheSopsCLIDecryptsIt: with spec.encryption, a
// Secret lands as <name>.sops.yaml whose values are encrypted, the first
// write bootstraps .sops.yaml, and in a checkout `sops -d` with the age
// identity gives back the Secret; `sops -e` below the target uses the
// bootstrapped rules.
func TestASecretIsEncryptedAndTheSopsCLIDecryptsIt(t *testing.T) {
	m := newMirror(t, "encrypted", "secrets")
	key := newAgeKey(t)
	apply(t, ageKeySecret(m.ns, "sops-age", key),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "db"},
			StringData: map[string]string{"password": "correct-horse-battery-staple", "username": "admin-of-db"}})
	encrypt(t, m, v1alpha3.AgeEncryption{SecretRef: &v1alpha3.LocalObjectReference{Name: "sops-age"}})
	// Another tenant's provider in the same namespace: its token is not this
	// target's to publish either.
	other := gitProvider(m.ns, "other-repo", env.git.HTTPURL(m.repo))
	other.Spec.SecretRef.Name = "other-credentials"
	apply(t, other, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "other-credentials"},
		StringData: map[string]string{"token": "another-tenants-token"}})
	startOperator(t)

	file := m.path + "/encrypted/secrets/db.sops.yaml"
	eventually(t, "the encrypted Secret in Git", func() bool { return gitFile(t, m.repo, file) != "" })
	eventually(t, "EncryptionConfigured=True", func() bool {
		c := targetCondition(t, m.ns, m.target, v1alpha3.ConditionEncryptionConfigured)
		return c != nil && c.Status == metav1.ConditionTrue && strings.Contains(c.Message, key.recipient)
	})
	for _, own := range []string{"sops-age", "git-credentials", "other-credentials"} {
		require.Empty(t, gitFile(t, m.repo, m.path+"/encrypted/secrets/"+own+".sops.yaml"),
			"the operator's own keys and credentials (%s) are never mirrored, not even encrypted", own)
	}
	content := gitFile(t, m.repo, file)
	require.Contains(t, content, "  name: db\n", "metadata stays readable")
	require.NotContains(t, content, base64.StdEncoding.EncodeToString([]byte("correct-horse-battery-staple")))
	require.Contains(t, gitFile(t, m.repo, m.path+"/.sops.yaml"), key.recipient)
	require.NotEmpty(t, gitFile(t, m.repo, m.path+"/README.md"))

	dir := checkout(t, m.repo)
	root := filepath.Join(dir, m.path)
	doc := sopsDecrypt(t, root, "encrypted/secrets/db.sops.yaml", key)
	require.Equal(t, "correct-horse-battery-staple", decodedData(t, doc, "password"))
	require.Equal(t, "admin-of-db", decodedData(t, doc, "username"))

	// A human adding a Secret below the target encrypts with the same rules.
	added := filepath.Join(root, "encrypted", "secrets", "added.sops.yaml")
	require.NoError(t, os.WriteFile(added, []byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: added\ndata:\n  k: dmFsdWUtYWRkZWQ=\n"), 0o600))
	cmd := exec.Command(sopsCLI(t), "-e", "-i", "encrypted/secrets/added.sops.yaml")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Equal(t, "value-added", decodedData(t, sopsDecrypt(t, root, "encrypted/secrets/added.sops.yaml", key), "k"))
}

// TestSecretCiphertextIsStable: a restart that replays an unchanged Secret
// commits nothing, and a changed value changes only its own ciphertext, the
// MAC and lastmodified.
func TestSecretCiphertextIsStable(t *testing.T) {
	m := newMirror(t, "stable", "secrets", "configmaps")
	key := newAgeKey(t)
	apply(t, ageKeySecret(m.ns, "sops-age", key),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "db"},
			StringData: map[string]string{"password": "first-password-value", "username": "stable-user-name"}})
	encrypt(t, m, v1alpha3.AgeEncryption{SecretRef: &v1alpha3.LocalObjectReference{Name: "sops-age"}})
	file := m.path + "/stable/secrets/db.sops.yaml"

	stop := startOperator(t)
	eventually(t, "the encrypted Secret in Git", func() bool { return gitFile(t, m.repo, file) != "" })
	stop()
	before := commitCount(t, m.repo)

	startOperator(t)
	waitReady(t, m.ns, m.target)
	// The replay is done once the target is Ready; a ConfigMap made now is
	// committed after whatever the replay committed.
	apply(t, configMap(m.ns, "sentinel", map[string]string{"k": "v"}))
	eventually(t, "the sentinel in Git", func() bool { return gitFile(t, m.repo, m.path+"/stable/configmaps/sentinel.yaml") != "" })
	require.Equal(t, before+1, commitCount(t, m.repo), "the replay of an unchanged Secret commits nothing:\n%s", gitLog(t, m.repo))
	touched, err := env.git.Git(m.repo, "show", "--name-only", "--format=", "main")
	require.NoError(t, err)
	require.Equal(t, m.path+"/stable/configmaps/sentinel.yaml", strings.TrimSpace(touched), "the last commit holds only the sentinel")

	var secret corev1.Secret
	require.NoError(t, env.kube.Client().Get(context.Background(), client.ObjectKey{Namespace: m.ns, Name: "db"}, &secret))
	secret.Data["password"] = []byte("second-password-value")
	require.NoError(t, env.kube.Client().Update(context.Background(), &secret))
	eventually(t, "the changed Secret in Git", func() bool { return commitCount(t, m.repo) == before+2 })
	diff, err := env.git.Git(m.repo, "diff", "--unified=0", "main~1", "main", "--", file)
	require.NoError(t, err)
	var changed []string
	for _, line := range strings.Split(diff, "\n") {
		if strings.HasPrefix(line, "+") && !strings.HasPrefix(line, "+++") {
			changed = append(changed, strings.Fields(line[1:])[0])
		}
	}
	require.Subset(t, []string{"password:", "mac:", "lastmodified:"}, changed, diff)
	require.Contains(t, changed, "password:", diff)
	require.Equal(t, "second-password-value", decodedData(t, sopsDecrypt(t, checkout(t, m.repo), file, key), "password"))
}

// TestWithoutAUsableKeyNoSecretIsWrittenAndTheConditionSaysWhy: a key
// Secret that does not exist writes no Secret and says so; the rest of the
// target mirrors. Once the key exists the Secret is written encrypted.
func TestWithoutAUsableKeyNoSecretIsWrittenAndTheConditionSaysWhy(t *testing.T) {
	m := newMirror(t, "key-missing", "secrets", "configmaps")
	apply(t, configMap(m.ns, "visible", map[string]string{"k": "v"}),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "db"},
			StringData: map[string]string{"password": "never-in-plaintext-value"}})
	encrypt(t, m, v1alpha3.AgeEncryption{SecretRef: &v1alpha3.LocalObjectReference{Name: "later-key"}})
	startOperator(t)

	eventually(t, "EncryptionKeyMissing explained", func() bool {
		c := targetCondition(t, m.ns, m.target, v1alpha3.ConditionEncryptionConfigured)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == v1alpha3.ReasonEncryptionKeyMissing &&
			strings.Contains(c.Message, "later-key") && strings.Contains(c.Message, "secrets in key-missing")
	})
	eventually(t, "the ConfigMap in Git", func() bool {
		return gitFile(t, m.repo, m.path+"/key-missing/configmaps/visible.yaml") != ""
	})
	eventually(t, "Ready=False/EncryptionRequired while the Secret is refused", func() bool {
		c := targetCondition(t, m.ns, m.target, v1alpha3.ConditionReady)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == v1alpha3.ReasonEncryptionRequired
	})
	tree, err := env.git.Git(m.repo, "ls-tree", "-r", "--name-only", "main")
	require.NoError(t, err)
	require.NotContains(t, tree, "secrets/", "no Secret is written, in any form")
	require.NotContains(t, tree, ".sops.yaml")
	require.GreaterOrEqual(t, metricSum(t, "gitopsreverser_placement_refusals_total"), 1.0)

	key := newAgeKey(t)
	apply(t, ageKeySecret(m.ns, "later-key", key))
	eventually(t, "the Secret written encrypted once the key exists", func() bool {
		return gitFile(t, m.repo, m.path+"/key-missing/secrets/db.sops.yaml") != ""
	})
	doc := sopsDecrypt(t, checkout(t, m.repo), m.path+"/key-missing/secrets/db.sops.yaml", key)
	require.Equal(t, "never-in-plaintext-value", decodedData(t, doc, "password"))
	waitReady(t, m.ns, m.target)
}

// TestAGeneratedKeyEncryptsAnAdditionalSensitiveType: a CRD named by
// --additional-sensitive-resources is encrypted like a Secret, to a key the
// operator generated into the Secret spec.encryption names.
func TestAGeneratedKeyEncryptsAnAdditionalSensitiveType(t *testing.T) {
	m := newMirror(t, "sensitive-crd", "vaults")
	applyCRD(t, namespacedCRD("secure.example.com", "vault", "Vault"))
	createCustom(t, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "secure.example.com/v1", "kind": "Vault",
		"metadata": map[string]any{"namespace": m.ns, "name": "keys"}, "spec": map[string]any{"token": "vault-token-plaintext-xyz"},
	}})
	encrypt(t, m, v1alpha3.AgeEncryption{SecretRef: &v1alpha3.LocalObjectReference{Name: "generated-age"}, GenerateWhenMissing: true})
	startOperatorWith(t, func(o *operator.Options) {
		o.AdditionalSensitive = []schema.GroupResource{{Group: "secure.example.com", Resource: "vaults"}}
	})

	file := m.path + "/sensitive-crd/secure.example.com/vaults/keys.sops.yaml"
	eventually(t, "the encrypted Vault in Git", func() bool { return gitFile(t, m.repo, file) != "" })
	require.NotContains(t, gitFile(t, m.repo, file), "vault-token-plaintext-xyz")
	var generated corev1.Secret
	require.NoError(t, env.kube.Client().Get(context.Background(), client.ObjectKey{Namespace: m.ns, Name: "generated-age"}, &generated))
	identities := string(generated.Data["age.agekey"])
	_, recipients, err := encryption.ParseIdentities(identities)
	require.NoError(t, err, "the operator generated an age identity into the Secret")
	doc := sopsDecrypt(t, checkout(t, m.repo), file, ageKey{file: identities, recipient: recipients[0]})
	require.Equal(t, "vault-token-plaintext-xyz", doc["spec"].(map[string]any)["token"])
}
