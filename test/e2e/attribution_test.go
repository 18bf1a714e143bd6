package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// actor is a client acting as user (impersonated by the suite's admin, so
// the audit event names user as impersonatedUser) with full rights.
func actor(t *testing.T, user string, extra map[string][]string) client.Client {
	t.Helper()
	cfg := env.kube.Config()
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:masters", "system:authenticated"}, Extra: extra}
	c, err := client.New(cfg, client.Options{Scheme: env.kube.Scheme()})
	require.NoError(t, err)
	return c
}

// authorOf is the author of the last commit that touched path.
func authorOf(t *testing.T, m mirrorSetup, path string) string {
	t.Helper()
	return lastAuthor(t, m.repo, "main", "--", path)
}

// lastAuthor is "name <email>" of the last commit git log finds with args.
func lastAuthor(t *testing.T, repo string, args ...string) string {
	t.Helper()
	out, err := env.git.Git(repo, append([]string{"log", "-1", "--format=%an <%ae>"}, args...)...)
	require.NoError(t, err)
	return out
}

// TestTheAuthorOfEachLiveChangeIsWhoMadeIt runs the real API server's
// audit webhook (batch mode, mTLS) into the operator's ingress: each kind
// of write is committed with its actor as the author and the operator as
// the committer.
func TestTheAuthorOfEachLiveChangeIsWhoMadeIt(t *testing.T) {
	m := newMirror(t, "attr-authors", "configmaps")
	startOperatorWith(t, withAttribution(10*time.Second))
	waitReady(t, m.ns, m.target)
	ctx := context.Background()
	file := m.path + "/attr-authors/configmaps/"
	alice := actor(t, "alice", map[string][]string{
		"configbutler.ai/claims/display-name": {"Alice Liddell"}, "configbutler.ai/claims/email": {"alice@example.com"}})
	bob := actor(t, "bob", nil)

	// create, by a human with OIDC claims
	require.NoError(t, alice.Create(ctx, configMap(m.ns, "shared", map[string]string{"v": "1"})))
	eventually(t, "the create in Git", func() bool { return containsLine(gitFile(t, m.repo, file+"shared.yaml"), `  v: "1"`) })
	require.Equal(t, "Alice Liddell <alice@example.com>", authorOf(t, m, file+"shared.yaml"))
	committer, err := env.git.Git(m.repo, "log", "-1", "--format=%cn <%ce>", "main")
	require.NoError(t, err)
	require.Equal(t, "GitOps Reverser <noreply@configbutler.ai>", committer)

	// update (PUT), by a human without claims: the username and a derived email
	var cm corev1.ConfigMap
	require.NoError(t, bob.Get(ctx, client.ObjectKey{Namespace: m.ns, Name: "shared"}, &cm))
	cm.Data["v"] = "2"
	require.NoError(t, bob.Update(ctx, &cm))
	eventually(t, "the update in Git", func() bool { return containsLine(gitFile(t, m.repo, file+"shared.yaml"), `  v: "2"`) })
	require.Equal(t, "bob <bob@noreply.cluster.local>", authorOf(t, m, file+"shared.yaml"))

	// update, by a human without claims whose username is an email: that email
	erin := actor(t, "erin@example.com", nil)
	require.NoError(t, erin.Get(ctx, client.ObjectKey{Namespace: m.ns, Name: "shared"}, &cm))
	cm.Data["v"] = "erin"
	require.NoError(t, erin.Update(ctx, &cm))
	eventually(t, "erin's update in Git", func() bool { return strings.Contains(gitFile(t, m.repo, file+"shared.yaml"), "erin") })
	require.Equal(t, "erin@example.com <erin@example.com>", authorOf(t, m, file+"shared.yaml"))

	// merge patch, by a service account
	robot := actor(t, "system:serviceaccount:ci:deployer", nil)
	patch, _ := json.Marshal(map[string]any{"data": map[string]string{"v": "3"}})
	require.NoError(t, robot.Patch(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "shared"}},
		client.RawPatch(types.MergePatchType, patch)))
	eventually(t, "the patch in Git", func() bool { return containsLine(gitFile(t, m.repo, file+"shared.yaml"), `  v: "3"`) })
	require.Equal(t, "system:serviceaccount:ci:deployer <systemserviceaccountcideployer@noreply.cluster.local>",
		authorOf(t, m, file+"shared.yaml"))

	// server-side apply, by alice again
	applied := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "applied"}, Data: map[string]string{"v": "1"}}
	require.NoError(t, alice.Patch(ctx, applied, client.Apply, client.FieldOwner("alice"), client.ForceOwnership))
	eventually(t, "the apply in Git", func() bool { return gitFile(t, m.repo, file+"applied.yaml") != "" })
	require.Equal(t, "Alice Liddell <alice@example.com>", authorOf(t, m, file+"applied.yaml"))

	// generateName create, by bob: the name comes from the response
	generated := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, GenerateName: "gen-"}, Data: map[string]string{"v": "1"}}
	require.NoError(t, bob.Create(ctx, generated))
	eventually(t, "the generated ConfigMap in Git", func() bool { return gitFile(t, m.repo, file+generated.Name+".yaml") != "" })
	require.Equal(t, "bob <bob@noreply.cluster.local>", authorOf(t, m, file+generated.Name+".yaml"))

	// delete, by bob: the commit that removes the file is his
	require.NoError(t, bob.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "shared"}}))
	eventually(t, "the delete in Git", func() bool { return gitFile(t, m.repo, file+"shared.yaml") == "" })
	require.Equal(t, "bob <bob@noreply.cluster.local>", authorOf(t, m, file+"shared.yaml"))
}

// TestAChangeWhoseAuditEventNeverComesIsAuthoredUnresolved: the API
// server does not audit this namespace, so no fact ever arrives; after the
// grace the change is committed, nothing lost, with the sentinel author.
func TestAChangeWhoseAuditEventNeverComesIsAuthoredUnresolved(t *testing.T) {
	m := newMirror(t, "attr-unaudited", "configmaps")
	startOperatorWith(t, withAttribution(500*time.Millisecond))
	waitReady(t, m.ns, m.target)
	apply(t, configMap(m.ns, "late", map[string]string{"v": "1"}))
	path := m.path + "/attr-unaudited/configmaps/late.yaml"
	eventually(t, "the change in Git", func() bool { return gitFile(t, m.repo, path) != "" })
	require.Equal(t, "unknown (attribution unresolved) <attribution-unresolved@gitops-reverser.invalid>", authorOf(t, m, path))
}

// TestADryRunMakesNoCommitAndTwoActorsMakeTwoCommits: a dry-run write
// persists nothing and is not a fact; two actors' changes in one window
// are two commits, each with its author.
func TestADryRunMakesNoCommitAndTwoActorsMakeTwoCommits(t *testing.T) {
	m := newMirror(t, "attr-two-actors", "configmaps")
	startOperatorWith(t, withAttribution(10*time.Second))
	waitReady(t, m.ns, m.target)
	ctx := context.Background()
	alice, bob := actor(t, "alice", nil), actor(t, "bob", nil)
	require.NoError(t, alice.Create(ctx, configMap(m.ns, "dry", map[string]string{"v": "1"}), client.DryRunAll))
	require.NoError(t, alice.Create(ctx, configMap(m.ns, "a", map[string]string{"v": "1"})))
	require.NoError(t, bob.Create(ctx, configMap(m.ns, "b", map[string]string{"v": "1"})))
	dir := m.path + "/attr-two-actors/configmaps/"
	eventually(t, "both ConfigMaps in Git", func() bool {
		return gitFile(t, m.repo, dir+"a.yaml") != "" && gitFile(t, m.repo, dir+"b.yaml") != ""
	})
	require.Equal(t, "alice <alice@noreply.cluster.local>", authorOf(t, m, dir+"a.yaml"))
	require.Equal(t, "bob <bob@noreply.cluster.local>", authorOf(t, m, dir+"b.yaml"))
	require.Empty(t, gitFile(t, m.repo, dir+"dry.yaml"), "a dry run persists nothing")
	log, err := env.git.Git(m.repo, "log", "--format=%an", "main")
	require.NoError(t, err)
	require.NotContains(t, log, "unknown", "every live change was attributed:\n%s", log)
	require.True(t, strings.Contains(log, "alice") && strings.Contains(log, "bob"))
}
