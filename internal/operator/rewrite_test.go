package operator

import (
	"context"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"testing"

	"code.gitea.io/sdk/gitea"
	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/test/harness"
)

// giteaCursorEnv is a control plane, a real Gitea and a Redis that outlive
// the operator runs of one test.
type giteaCursorEnv struct {
	*cursorEnv
	gitea *harness.Gitea
	owner string
}

const giteaRepo = "mirror"

func newGiteaCursorEnv(t *testing.T) *giteaCursorEnv {
	t.Helper()
	kube, err := harness.StartKube(harness.KubeOptions{})
	require.NoError(t, err)
	t.Cleanup(kube.Stop)
	g, err := harness.StartGitea(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(g.Stop)
	repo, err := g.CreateRepo(giteaRepo, true)
	require.NoError(t, err)
	redis, err := harness.StartRedis(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(redis.Stop)
	rdb := goredis.NewClient(&goredis.Options{Addr: redis.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	env := &giteaCursorEnv{cursorEnv: &cursorEnv{kube: kube, redis: redis, rdb: rdb}, gitea: g, owner: repo.Owner.UserName}
	for _, obj := range giteaMirrorSetup(g.HTTPCloneURL(env.owner, giteaRepo), g.Token()) {
		require.NoError(t, kube.Client().Create(context.Background(), obj), "%T %s", obj, obj.GetName())
	}
	return env
}

// giteaMirrorSetup is mirrorSetup through the Gitea forge.
func giteaMirrorSetup(url, token string) []client.Object {
	objs := mirrorSetup(url)
	for _, obj := range objs {
		switch o := obj.(type) {
		case *corev1.Secret:
			o.StringData = map[string]string{"token": token}
		case *v1alpha3.GitProvider:
			o.Spec.Forge = &v1alpha3.ForgeSpec{Type: v1alpha3.ForgeGitea}
		}
	}
	return objs
}

// head is the commit main points at.
func (e *giteaCursorEnv) head(t *testing.T) string {
	t.Helper()
	b, _, err := e.gitea.Client().GetRepoBranch(e.owner, giteaRepo, "main")
	require.NoError(t, err)
	return b.Commit.ID
}

// gitConfigMaps are the ConfigMap names main holds.
func (e *giteaCursorEnv) gitConfigMaps(t *testing.T) []string {
	t.Helper()
	entries, resp, err := e.gitea.Client().ListContents(e.owner, giteaRepo, "main", configMapsDir)
	if resp != nil && resp.StatusCode == 404 {
		return nil
	}
	require.NoError(t, err)
	var names []string
	for _, entry := range entries {
		names = append(names, strings.TrimSuffix(entry.Name, ".yaml"))
	}
	sort.Strings(names)
	return names
}

// forcePush moves main back to commit with the real git client, as a
// person rewriting the branch would.
func (e *giteaCursorEnv) forcePush(t *testing.T, commit string) {
	t.Helper()
	dir := t.TempDir()
	url := strings.Replace(e.gitea.HTTPCloneURL(e.owner, giteaRepo), "://", "://"+e.gitea.AdminUser()+":"+e.gitea.Token()+"@", 1)
	for _, args := range [][]string{
		{"clone", "--quiet", url, dir},
		{"-C", dir, "push", "--quiet", "--force", "origin", commit + ":refs/heads/main"},
	} {
		out, err := exec.Command("git", args...).CombinedOutput()
		require.NoError(t, err, "git %s: %s", args[0], out)
	}
}

// TestARewrittenBranchIsHealedAfterARestartWithCursors: the operator
// mirrors ConfigMaps to Gitea with resume cursors in Redis and stops;
// someone force-pushes main back over the operator's commits; nothing
// changes in the cluster. The next start finds that the branch no longer
// holds the commit its cursors were stored at, replays, and Git has the
// files again; the cold replay says why. A branch that only moved forward
// meanwhile (an external commit on top) still resumes. A rewrite under a
// running operator is healed by a resync request on the GitTarget.
func TestARewrittenBranchIsHealedAfterARestartWithCursors(t *testing.T) {
	env := newGiteaCursorEnv(t)
	before := env.head(t)

	first := env.start(t)
	var names []string
	var last *corev1.ConfigMap
	for i := range 6 {
		last = env.createConfigMap(t, fmt.Sprintf("cm-%d", i))
		names = append(names, last.Name)
	}
	first.waitFor(t, "every ConfigMap in Gitea", func() bool { return slicesEqual(env.gitConfigMaps(t), names) })
	env.waitForCursorAt(t, first, last.ResourceVersion)
	first.stop()
	require.NotEqual(t, before, env.head(t), "the operator committed")

	t.Run("a rewrite while stopped is healed at the next start", func(t *testing.T) {
		env.forcePush(t, before)
		require.Empty(t, env.gitConfigMaps(t), "the rewrite took the operator's files")
		run := env.start(t)
		run.waitFor(t, "files back in Gitea", func() bool { return slicesEqual(env.gitConfigMaps(t), names) })
		require.Equal(t, 1.0, run.counter(t, "gitopsreverser_watch_cold_replays_total",
			map[string]string{"resource": "configmaps", "reason": "branch_rewritten"}))
		require.Zero(t, run.counter(t, "gitopsreverser_watch_resumes_total", configMapsLabels))
		last = env.createConfigMap(t, "after-heal")
		names = append(names, last.Name)
		run.waitFor(t, "after-heal in Gitea", func() bool { return slicesEqual(env.gitConfigMaps(t), names) })
		env.waitForCursorAt(t, run, last.ResourceVersion)
		run.stop()
	})

	t.Log("main moves forward while no operator runs")
	_, _, err := env.gitea.Client().CreateFile(env.owner, giteaRepo, "notes.md", gitea.CreateFileOptions{
		FileOptions: gitea.FileOptions{BranchName: "main", Message: "a colleague's note"}, Content: "bm90ZXMK"})
	require.NoError(t, err)
	run := env.start(t) // runs on through the last step
	t.Run("a branch that moved forward still resumes", func(t *testing.T) {
		names = append(names, env.createConfigMap(t, "sentinel").Name)
		run.waitFor(t, "sentinel in Gitea", func() bool { return slicesEqual(env.gitConfigMaps(t), names) })
		require.Equal(t, 1.0, run.counter(t, "gitopsreverser_watch_resumes_total", configMapsLabels))
		require.Zero(t, run.counter(t, "gitopsreverser_watch_cold_replays_total", map[string]string{"resource": "configmaps"}))
	})

	t.Run("a resync request heals a rewrite under the running operator", func(t *testing.T) {
		names = env.clusterConfigMaps(t)
		env.forcePush(t, before)
		require.Empty(t, env.gitConfigMaps(t))
		var target v1alpha3.GitTarget
		key := client.ObjectKey{Namespace: "team-a", Name: "mirror"}
		require.NoError(t, env.kube.Client().Get(context.Background(), key, &target))
		const requested = "2026-12-02T12:00:00Z"
		target.Annotations = map[string]string{v1alpha3.ResyncRequestedAtAnnotation: requested}
		require.NoError(t, env.kube.Client().Update(context.Background(), &target))
		run.waitFor(t, "files back in Gitea", func() bool { return slicesEqual(env.gitConfigMaps(t), names) })
		run.waitFor(t, "request recorded as handled", func() bool {
			var got v1alpha3.GitTarget
			return env.kube.Client().Get(context.Background(), key, &got) == nil && got.Status.LastHandledResyncAt == requested
		})
		require.Equal(t, 1.0, run.counter(t, "gitopsreverser_watch_cold_replays_total",
			map[string]string{"resource": "configmaps", "reason": "resync_requested"}))
	})
}

func slicesEqual(got, want []string) bool {
	sorted := append([]string(nil), want...)
	sort.Strings(sorted)
	return strings.Join(got, ",") == strings.Join(sorted, ",")
}
