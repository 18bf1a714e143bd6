package branch_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	yaml "go.yaml.in/yaml/v3"

	"github.com/configbutler/gitops-reverser/internal/branch"
	"github.com/configbutler/gitops-reverser/internal/encryption"
	"github.com/configbutler/gitops-reverser/internal/manifest"
)

func secret(name, password string) branch.Write {
	return branch.Write{
		ID:        manifest.ObjectID{Version: "v1", Kind: "Secret", Resource: "secrets", Namespace: "team", Name: name},
		YAML:      []byte(fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: %s\n  namespace: team\ndata:\n  password: %s\n  user: YWRtaW4=\n", name, password)),
		Sensitive: true,
	}
}

// encryptingTarget registers the test target with an encryptor for the
// age identity file id.
func encryptingTarget(t *testing.T, w *branch.Worker, id string) {
	t.Helper()
	enc, err := encryption.New(encryption.Keys{Identities: []string{id}})
	require.NoError(t, err)
	setEncryptor(t, w, enc)
}

func setEncryptor(t *testing.T, w *branch.Worker, enc branch.Encryptor) {
	t.Helper()
	require.NoError(t, w.SetTarget(context.Background(), branch.Target{Key: target, Path: "mirror", Encryptor: enc}))
}

func TestASensitiveObjectIsEncryptedAndStaysStableAcrossARestart(t *testing.T) {
	id, recipient, err := encryption.GenerateIdentity(time.Now())
	require.NoError(t, err)
	w := newWorker(t, "encrypt", nil, nil)
	encryptingTarget(t, w, id)
	write(t, w, branch.Author{}, secret("db", "aHVudGVyMg=="))
	flush(t, w)

	file := show(t, "encrypt", "mirror/team/secrets/db.sops.yaml")
	require.NotContains(t, file, "aHVudGVyMg==")
	require.Contains(t, file, "recipient: "+recipient)
	require.Contains(t, show(t, "encrypt", "mirror/.sops.yaml"), "age: "+recipient, "the first write bootstraps .sops.yaml")
	require.Contains(t, show(t, "encrypt", "mirror/README.md"), "GitOps Reverser")

	// A restart: a new worker and encryptor replay the same Secret.
	w = startWorker(t, "encrypt", nil, nil)
	encryptingTarget(t, w, id)
	write(t, w, branch.Author{}, secret("db", "aHVudGVyMg=="))
	flush(t, w)
	require.Len(t, commits(t, "encrypt"), 1, "an unchanged Secret makes no commit")

	write(t, w, branch.Author{}, secret("db", "aHVudGVyMw=="))
	flush(t, w)
	require.Len(t, commits(t, "encrypt"), 2)
	diff, err := git.Git("encrypt", "diff", "--unified=0", "main~1", "main", "--", "mirror/team/secrets/db.sops.yaml")
	require.NoError(t, err)
	var changed []string
	for _, line := range strings.Split(diff, "\n") {
		if strings.HasPrefix(line, "+") && !strings.HasPrefix(line, "+++") {
			changed = append(changed, strings.Fields(line[1:])[0])
		}
	}
	// lastmodified has second precision: it changes unless both commits
	// fell in the same second.
	require.Subset(t, []string{"password:", "lastmodified:", "mac:"}, changed, diff)
	require.Contains(t, changed, "password:", diff)
	require.Contains(t, changed, "mac:", diff)
}

func TestWithoutAnEncryptorASensitiveObjectIsRefusedAndTheRestCommits(t *testing.T) {
	var refused []manifest.Refusal
	w := newWorker(t, "no-encryptor", nil, func(c *branch.Config) {
		c.OnPlanned = func(_ branch.TargetKey, _ []manifest.ObjectID, r []manifest.Refusal) { refused = append(refused, r...) }
	})
	write(t, w, branch.Author{}, secret("db", "aHVudGVyMg=="))
	write(t, w, branch.Author{}, cm("visible", "1"))
	flush(t, w)

	require.Len(t, refused, 1)
	require.Equal(t, manifest.RefusalNotEncrypted, refused[0].Reason)
	tree, err := git.Git("no-encryptor", "ls-tree", "-r", "--name-only", "main")
	require.NoError(t, err)
	require.NotContains(t, tree, "secrets")
	require.NotContains(t, tree, ".sops.yaml")
}

// brokenEncryptor fails every encryption.
type brokenEncryptor struct{}

func (brokenEncryptor) EncryptTree(string, []byte, *yaml.Node, []byte) ([]byte, error) {
	return nil, errors.New("no key")
}
func (brokenEncryptor) SopsConfig() []byte { return []byte("creation_rules: []\n") }

func TestAFailedEncryptionRefusesOnlyThatObject(t *testing.T) {
	var refused []manifest.Refusal
	w := newWorker(t, "encrypt-fails", nil, func(c *branch.Config) {
		c.OnPlanned = func(_ branch.TargetKey, _ []manifest.ObjectID, r []manifest.Refusal) { refused = append(refused, r...) }
	})
	setEncryptor(t, w, brokenEncryptor{})
	write(t, w, branch.Author{}, secret("db", "aHVudGVyMg=="))
	write(t, w, branch.Author{}, cm("visible", "1"))
	flush(t, w)

	require.Len(t, refused, 1)
	require.Equal(t, branch.RefusalEncryptionFailed, refused[0].Reason)
	require.Contains(t, refused[0].Detail, "no key")
	require.Contains(t, show(t, "encrypt-fails", "mirror/team/configmaps/visible.yaml"), "visible")
}
