package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/forges/sshsign"
	"github.com/configbutler/gitops-reverser/internal/signing"
	"github.com/configbutler/gitops-reverser/test/gitverify"
	ghsim "github.com/configbutler/gitops-reverser/test/sim/github"
)

// committerEmail is who every mirror commit is committed by; the
// allowed_signers files below name it as the principal.
const committerEmail = "noreply@configbutler.ai"

// enableSigning turns on spec.commit.signing on the mirror's GitProvider.
func enableSigning(t *testing.T, m mirrorSetup, secret string, generate bool) {
	t.Helper()
	gp := v1alpha3.GitProvider{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "repo"}}
	edit(t, &gp, func() {
		gp.Spec.Commit.Signing = &v1alpha3.CommitSigning{
			SecretRef: v1alpha3.SecretKeyReference{Name: secret}, GenerateWhenMissing: generate}
	})
}

// signingPublicKey waits for the GitProvider to publish its signing key and
// returns it, as a user reads it with kubectl.
func signingPublicKey(t *testing.T, m mirrorSetup) string {
	t.Helper()
	var key string
	eventually(t, "status.signingPublicKey", func() bool {
		var gp v1alpha3.GitProvider
		if env.kube.Client().Get(context.Background(), client.ObjectKey{Namespace: m.ns, Name: "repo"}, &gp) != nil {
			return false
		}
		key = gp.Status.SigningPublicKey
		return key != ""
	})
	return key
}

// requireEveryCommitVerifies runs git verify-commit on every commit of main
// with allowedSigners, and returns the head commit object.
func requireEveryCommitVerifies(t *testing.T, repo, allowedSigners string) []byte {
	t.Helper()
	commits, err := env.git.Git(repo, "rev-list", "main")
	require.NoError(t, err)
	var head []byte
	for _, id := range strings.Fields(commits) {
		raw := gitverify.CatCommit(t, env.git.RepoPath(repo), id)
		verified, report, err := gitverify.VerifyCommit(t, raw, allowedSigners)
		require.NoError(t, err, "git verify-commit %s: %s\n%s", id, report, gitLog(t, repo))
		require.Equal(t, id, verified)
		if head == nil {
			head = raw
		}
	}
	require.NotNil(t, head, "main has commits")
	return head
}

// TestSignedCommitsVerifyWithGitAndATamperedOneDoesNot: with
// generateWhenMissing the provider generates a key into the Secret and
// publishes its public half; every mirrored commit passes git verify-commit
// against an allowed_signers file built from that status field, and the
// same signature under a changed message does not. Replacing the key in the
// Secret reaches the branch worker: the next commit verifies with the new
// key only.
func TestSignedCommitsVerifyWithGitAndATamperedOneDoesNot(t *testing.T) {
	m := newMirror(t, "signed", "configmaps")
	enableSigning(t, m, "commit-signing", true)
	startOperator(t)
	waitReady(t, m.ns, m.target)
	publicKey := signingPublicKey(t, m)
	require.True(t, strings.HasPrefix(publicKey, "ssh-ed25519 "), publicKey)

	path := m.path + "/signed/configmaps/app.yaml"
	apply(t, configMap(m.ns, "app", map[string]string{"k": "v1"}))
	eventually(t, "the ConfigMap in Git", func() bool { return gitFile(t, m.repo, path) != "" })
	allowed := gitverify.AllowedSigners(committerEmail, publicKey)
	head := requireEveryCommitVerifies(t, m.repo, allowed)

	forged := gitverify.WithMessage(t, head, "Delete everything\n")
	_, report, err := gitverify.VerifyCommit(t, forged, allowed)
	require.Error(t, err, "a tampered commit must not verify: %s", report)

	// A new key replaces the branch worker. A change already in the old
	// worker's window when the key rotates is committed with the old key,
	// so the test edits until an edit lands: that commit and every later one
	// must carry the new key.
	rotated, err := sshsign.Generate("rotated")
	require.NoError(t, err)
	ctx := context.Background()
	var secret corev1.Secret
	require.NoError(t, env.kube.Client().Get(ctx, client.ObjectKey{Namespace: m.ns, Name: "commit-signing"}, &secret))
	secret.Data[signing.DefaultKey] = rotated
	require.NoError(t, env.kube.Client().Update(ctx, &secret))
	rotatedSigner, err := sshsign.Parse(rotated)
	require.NoError(t, err)
	eventually(t, "the rotated key in status", func() bool { return signingPublicKey(t, m) == rotatedSigner.PublicKey() })

	rotatedAllowed := gitverify.AllowedSigners(committerEmail, rotatedSigner.PublicKey())
	var latest []byte
	for edit := 2; ; edit++ {
		require.Less(t, edit, 30, "no commit signed with the rotated key after %d edits", edit)
		value := fmt.Sprintf("v%d", edit)
		var cm corev1.ConfigMap
		require.NoError(t, env.kube.Client().Get(ctx, client.ObjectKey{Namespace: m.ns, Name: "app"}, &cm))
		cm.Data["k"] = value
		require.NoError(t, env.kube.Client().Update(ctx, &cm))
		eventually(t, "the edit in Git", func() bool { return containsLine(gitFile(t, m.repo, path), "  k: "+value) })
		latest = gitverify.CatCommit(t, env.git.RepoPath(m.repo), "main")
		if _, _, err := gitverify.VerifyCommit(t, latest, rotatedAllowed); err == nil {
			break
		}
	}
	_, report, err = gitverify.VerifyCommit(t, latest, allowed)
	require.Error(t, err, "the commit with the rotated key does not verify with the old one: %s", report)
}

// TestWithoutASigningKeyNothingIsCommittedUntilOneExists: signing fails
// closed. A provider whose key Secret does not exist (and may not be
// generated) is not Ready, its GitTarget waits and the repository stays
// empty; creating the key mirrors everything, signed.
func TestWithoutASigningKeyNothingIsCommittedUntilOneExists(t *testing.T) {
	m := newMirror(t, "unsigned-never", "configmaps")
	enableSigning(t, m, "commit-signing", false)
	apply(t, configMap(m.ns, "early", map[string]string{"k": "v"}))
	startOperator(t)

	eventually(t, "the GitTarget waits for the provider's signing key", func() bool {
		c := targetCondition(t, m.ns, m.target, v1alpha3.ConditionGitPathAccepted)
		return c != nil && c.Reason == v1alpha3.ReasonGitProviderNotReady && strings.Contains(c.Message, "commit-signing")
	})
	require.Zero(t, commitCount(t, m.repo), "nothing is committed unsigned:\n%s", gitLog(t, m.repo))

	key, err := sshsign.Generate("brought by the user")
	require.NoError(t, err)
	signer, err := sshsign.Parse(key)
	require.NoError(t, err)
	apply(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "commit-signing"},
		Data: map[string][]byte{signing.DefaultKey: key}})
	eventually(t, "the ConfigMap in Git", func() bool {
		return gitFile(t, m.repo, m.path+"/unsigned-never/configmaps/early.yaml") != ""
	})
	require.Equal(t, signer.PublicKey(), signingPublicKey(t, m))
	requireEveryCommitVerifies(t, m.repo, gitverify.AllowedSigners(committerEmail, signer.PublicKey()))
}

// TestSignedCommitsThroughTheGitHubAPIVerify: on GitHub the signature goes
// into "Create a commit" as its signature parameter, and the commit GitHub
// stores passes git verify-commit.
func TestSignedCommitsThroughTheGitHubAPIVerify(t *testing.T) {
	sim := ghsim.Start()
	t.Cleanup(sim.Close)
	sim.AddToken("ghp_signing")
	require.NoError(t, sim.CreateRepo("acme", "signed-mirror", map[string]string{"README.md": "mirror\n"}))
	ns := "signed-via-github"
	githubMirror(t, sim, ns, "signed-mirror", map[string]string{"token": "ghp_signing"}, func(spec *v1alpha3.GitProviderSpec) {
		spec.Commit.Signing = &v1alpha3.CommitSigning{
			SecretRef: v1alpha3.SecretKeyReference{Name: "commit-signing"}, GenerateWhenMissing: true}
	})
	startOperator(t)
	eventually(t, "the ConfigMap committed through the GitHub API", func() bool {
		_, ok := sim.File("acme", "signed-mirror", "main", "live/signed-via-github/configmaps/settings.yaml")
		return ok
	})
	var gp v1alpha3.GitProvider
	require.NoError(t, env.kube.Client().Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "github"}, &gp))
	head, err := sim.HeadCommit("acme", "signed-mirror", "main")
	require.NoError(t, err)
	raw, err := sim.CommitObject("acme", "signed-mirror", head.SHA)
	require.NoError(t, err)
	id, report, err := gitverify.VerifyCommit(t, raw, gitverify.AllowedSigners(committerEmail, gp.Status.SigningPublicKey))
	require.NoError(t, err, "git verify-commit: %s\n%s", report, raw)
	require.Equal(t, head.SHA, id)
}
