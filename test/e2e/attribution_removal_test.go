package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestALateDeleteIsNeverPinnedOnTheLastEditor: alice creates six
// ConfigMaps and her facts reach the index; erin deletes them with a
// grace far below the API server's batch delay, so each removal is
// committed before erin's delete fact arrives. The index holds alice's
// write facts for every uid the whole time: a write fact names who last
// edited an object, never who removed it, so every delete commit is
// unresolved and none is alice's.
func TestALateDeleteIsNeverPinnedOnTheLastEditor(t *testing.T) {
	m := newMirror(t, "attr-late-delete", "configmaps")
	startOperatorWith(t, withAttribution(time.Millisecond))
	waitReady(t, m.ns, m.target)
	ctx := context.Background()
	alice, erin := actor(t, "alice", nil), actor(t, "erin", nil)
	dir := m.path + "/attr-late-delete/configmaps/"
	names := []string{"one", "two", "three", "four", "five", "six"}

	for _, name := range names {
		require.NoError(t, alice.Create(ctx, configMap(m.ns, name, map[string]string{"v": "1"})))
	}
	eventually(t, "the creates in Git", func() bool {
		for _, name := range names {
			if gitFile(t, m.repo, dir+name+".yaml") == "" {
				return false
			}
		}
		return true
	})
	eventually(t, "alice's six facts in the index", func() bool {
		return metricSumWhere(t, "gitopsreverser_attribution_facts_total", map[string]string{"op": "written"}) >= float64(len(names))
	})
	before := head(t, m.repo)

	for _, name := range names {
		require.NoError(t, erin.Delete(ctx, configMap(m.ns, name, nil)))
	}
	eventually(t, "the deletes in Git", func() bool {
		for _, name := range names {
			if gitFile(t, m.repo, dir+name+".yaml") != "" {
				return false
			}
		}
		return true
	})
	authors, err := env.git.Git(m.repo, "log", "--format=%an <%ae>", before+"..main", "--", dir)
	require.NoError(t, err)
	for _, author := range strings.Split(authors, "\n") {
		require.NotEqual(t, gitAuthor("alice"), author, "a removal named its last editor:\n%s", gitLog(t, m.repo))
		require.Contains(t, []string{unresolvedAuthor, gitAuthor("erin")}, author, "\n%s", gitLog(t, m.repo))
	}
	require.Zero(t, metricSumWhere(t, "gitopsreverser_attribution_resolutions_total", map[string]string{"tier": "latest"}),
		"no removal resolved on a write fact")
}

// TestADeleteMadeWhileTheOperatorWasDownNeverNamesTheCreator: a service
// account creates a ConfigMap, the operator stops, erin deletes it, and
// the operator resumes from its cursor, sees the removal live and finds
// the service account's create fact replayed from Redis. Erin's delete
// fact reaches it only if the API server's retried batch does: the commit
// is erin's or unresolved, never the service account's.
func TestADeleteMadeWhileTheOperatorWasDownNeverNamesTheCreator(t *testing.T) {
	redis, rdb := startRedis(t)
	tune := attributingWithRedis(redis, 2*time.Second)
	m := newMirror(t, "attr-down-delete", "configmaps")
	stopFirst := startOperatorWith(t, tune)
	waitReady(t, m.ns, m.target)
	ctx := context.Background()
	deployer := "system:serviceaccount:" + m.ns + ":deployer"
	file := m.path + "/attr-down-delete/configmaps/app.yaml"

	require.NoError(t, actor(t, deployer, nil).Create(ctx, configMap(m.ns, "app", map[string]string{"v": "1"})))
	eventually(t, "the create in Git", func() bool { return gitFile(t, m.repo, file) != "" })
	require.Equal(t, gitAuthor(deployer), authorOf(t, m, file), "the create is the service account's")
	waitForStoredCursor(t, rdb, m, resourceVersion(t, m.ns, "app"))
	stopFirst()

	require.NoError(t, actor(t, "erin", nil).Delete(ctx, configMap(m.ns, "app", nil)))
	startOperatorWith(t, tune)
	eventually(t, "the delete in Git", func() bool { return gitFile(t, m.repo, file) == "" })
	author, err := env.git.Git(m.repo, "log", "-1", "--format=%an <%ae>", "main", "--", file)
	require.NoError(t, err)
	require.Contains(t, []string{unresolvedAuthor, gitAuthor("erin")}, author,
		fmt.Sprintf("the removal names %s:\n%s", author, gitLog(t, m.repo)))
	require.GreaterOrEqual(t, metricSumWhere(t, "gitopsreverser_watch_resumes_total", map[string]string{"resource": "configmaps"}), 1.0,
		"the removal came as a live event of the resumed watch")
}
