package e2e

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// configuredCommitter is the suite's committer (the operator's default).
const configuredCommitter = "GitOps Reverser <noreply@configbutler.ai>"

// TestAReplaysCommitIsTheCommittersEvenWhenAFactNamesTheWriter: alice
// creates a ConfigMap before anything watches it, and her fact (the API
// server's own event, relayed) is in the operator's index before the
// WatchRule that claims ConfigMaps exists. The rule's replay commits the
// ConfigMap: a replay states what the cluster holds, not who changed it, so
// its commit is authored by the configured committer, not alice.
func TestAReplaysCommitIsTheCommittersEvenWhenAFactNamesTheWriter(t *testing.T) {
	m := newMirror(t, "attr-replay") // no rule yet
	capture := startStandIn(t, http.StatusOK)
	ctx := context.Background()
	require.NoError(t, actor(t, "alice", nil).Create(ctx, configMap(m.ns, "before", map[string]string{"v": "1"})))
	created := capture.waitForEvent(t, "create", m.ns, "before")
	capture.stop()

	ingress := ingressElsewhere(t)
	startOperatorWith(t, withIngressAt(ingress, 10*time.Second))
	eventually(t, "the ingress accepting alice's event", func() bool {
		status, err := tryPostAudit(ingress, "default", created)
		return err == nil && status == http.StatusOK
	})
	eventually(t, "alice's fact in the index", func() bool {
		return metricSumWhere(t, "gitopsreverser_attribution_facts_total", map[string]string{"op": "written"}) >= 1
	})

	apply(t, watchRule(m.ns, "rule", m.target, "configmaps"))
	path := m.path + "/attr-replay/configmaps/before.yaml"
	eventually(t, "the replayed ConfigMap in Git", func() bool { return gitFile(t, m.repo, path) != "" })
	sha := head(t, m.repo)
	identities, err := env.git.Git(m.repo, "log", "-1", "--format=%an <%ae>%n%cn <%ce>", sha, "--", path)
	require.NoError(t, err)
	require.Equal(t, configuredCommitter+"\n"+configuredCommitter, identities,
		"the replay's commit is the committer's, author and committer:\n%s", gitLog(t, m.repo))
}
