package manifest_test

import (
	"fmt"
	"path"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/manifest"
)

func configMapID(namespace, name string) manifest.ObjectID {
	return manifest.ObjectID{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: namespace, Name: name}
}

func secretID(namespace, name string) manifest.ObjectID {
	return manifest.ObjectID{Version: "v1", Kind: "Secret", Resource: "secrets", Namespace: namespace, Name: name}
}

func deploymentID(namespace, name string) manifest.ObjectID {
	return manifest.ObjectID{Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments", Namespace: namespace, Name: name}
}

// configMapYAML is a ConfigMap the way sanitize.Marshal writes it.
func configMapYAML(namespace, name, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\ndata:\n  key: %s\n",
		name, namespace, value)
}

func deploymentYAML(namespace, name string, replicas int) string {
	return fmt.Sprintf("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  replicas: %d\n",
		name, namespace, replicas)
}

// encryptedSecretYAML is a SOPS-encrypted Secret: plaintext identity,
// ciphertext values, and the sops metadata mapping.
func encryptedSecretYAML(namespace, name, ciphertext string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: %s\n  namespace: %s\n"+
		"data:\n  password: ENC[AES256_GCM,data:%s,type:str]\n"+
		"sops:\n  age:\n  - recipient: age1example\n  mac: ENC[AES256_GCM,data:mac,type:str]\n  version: 3.9.0\n",
		name, namespace, ciphertext)
}

func upsert(id manifest.ObjectID, yaml string) manifest.Upsert {
	return manifest.Upsert{ID: id, YAML: []byte(yaml)}
}

func newIndex(t testing.TB, root string, files map[string]string) *manifest.Index {
	t.Helper()
	contents := make(map[string][]byte, len(files))
	for p, content := range files {
		contents[p] = []byte(content)
	}
	ix, err := manifest.NewIndex(root, contents)
	require.NoError(t, err)
	return ix
}

// withReadme returns files plus a root README, so a test sees only its own
// changes.
func withReadme(root string, files map[string]string) map[string]string {
	out := map[string]string{path.Join(root, "README.md"): "# existing\n"}
	for p, content := range files {
		out[p] = content
	}
	return out
}

func plan(t *testing.T, ix *manifest.Index, ops ...manifest.Op) manifest.Result {
	t.Helper()
	result, err := manifest.Plan(ix, ops)
	require.NoError(t, err)
	return result
}

// contents renders a result as path → content, "<deleted>" for deletions.
func contents(result manifest.Result) map[string]string {
	out := make(map[string]string, len(result.Changes))
	for _, change := range result.Changes {
		if change.Delete {
			out[change.Path] = "<deleted>"
			continue
		}
		out[change.Path] = string(change.Content)
	}
	return out
}

func refusalReasons(result manifest.Result) map[string]manifest.RefusalReason {
	out := make(map[string]manifest.RefusalReason, len(result.Refusals))
	for _, refusal := range result.Refusals {
		out[refusal.ID.Name] = refusal.Reason
	}
	return out
}
