package e2e

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
)

// TestTwoTargetsShareABranchAndAnOverlapIsRefused: two GitTargets on one
// branch both mirror through the one branch worker; a third whose path
// overlaps the first is refused with PathOverlap.
func TestTwoTargetsShareABranchAndAnOverlapIsRefused(t *testing.T) {
	m := newMirror(t, "shared-branch", "configmaps")
	apply(t,
		&v1alpha3.GitTarget{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "second"},
			Spec: v1alpha3.GitTargetSpec{ProviderRef: v1alpha3.GitProviderReference{Name: "repo"}, Branch: "main", Path: "other/place"}},
		watchRule(m.ns, "second", "second", "serviceaccounts"),
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "robot"}},
		configMap(m.ns, "settings", map[string]string{"k": "v"}),
	)
	startOperator(t)
	eventually(t, "both targets in Git", func() bool {
		return gitFile(t, m.repo, m.path+"/shared-branch/configmaps/settings.yaml") != "" &&
			gitFile(t, m.repo, "other/place/shared-branch/serviceaccounts/robot.yaml") != ""
	})
	waitReady(t, m.ns, m.target)
	waitReady(t, m.ns, "second")

	apply(t, &v1alpha3.GitTarget{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "overlapping"},
		Spec: v1alpha3.GitTargetSpec{ProviderRef: v1alpha3.GitProviderReference{Name: "repo"}, Branch: "main", Path: m.path + "/nested"}})
	eventually(t, "the overlapping target refused", func() bool {
		c := targetCondition(t, m.ns, "overlapping", v1alpha3.ConditionValidated)
		return c != nil && c.Reason == v1alpha3.ReasonPathOverlap
	})
	require.Equal(t, "True", string(conditionStatus(t, m.ns, "overlapping", v1alpha3.ConditionStalled)))
	require.Equal(t, "True", string(conditionStatus(t, m.ns, m.target, v1alpha3.ConditionReady)), "the first target keeps its path")
}

// TestAnExternalCommitIsKeptAndTheOperatorsChangeStillLands: someone pushes
// to the branch between the operator's writes; the operator's next commit
// conflicts, replays on the new head, and both changes are in Git.
func TestAnExternalCommitIsKeptAndTheOperatorsChangeStillLands(t *testing.T) {
	m := newMirror(t, "external", "configmaps")
	apply(t, configMap(m.ns, "first", map[string]string{"k": "1"}))
	startOperator(t)
	eventually(t, "the first ConfigMap in Git", func() bool {
		return gitFile(t, m.repo, m.path+"/external/configmaps/first.yaml") != ""
	})

	pushExternalCommit(t, m.repo, "NOTES.md", "written by a human\n")
	apply(t, configMap(m.ns, "second", map[string]string{"k": "2"}))
	eventually(t, "the operator's change on top of the external commit", func() bool {
		return gitFile(t, m.repo, m.path+"/external/configmaps/second.yaml") != ""
	})
	require.Equal(t, "written by a human\n", gitFile(t, m.repo, "NOTES.md"), "the external commit is kept")
	require.NotEmpty(t, gitFile(t, m.repo, m.path+"/external/configmaps/first.yaml"))
	parents, err := env.git.Git(m.repo, "log", "--format=%s", "-3", "main")
	require.NoError(t, err)
	require.Contains(t, parents, "human edit", "the external commit stays in the history:\n%s", parents)
	require.GreaterOrEqual(t, metricSum(t, "gitopsreverser_commit_conflicts_total"), 1.0, "the operator's commit met the moved head and replayed")
}

// TestASecretWithoutEncryptionIsNeverWritten: a rule claiming Secrets on a
// target without encryption writes nothing for them and says why.
func TestASecretWithoutEncryptionIsNeverWritten(t *testing.T) {
	m := newMirror(t, "no-encryption", "configmaps", "secrets")
	apply(t,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "db"}, StringData: map[string]string{"password": "hunter2-plaintext"}},
		configMap(m.ns, "visible", map[string]string{"k": "v"}),
	)
	startOperator(t)
	eventually(t, "the ConfigMap in Git", func() bool {
		return gitFile(t, m.repo, m.path+"/no-encryption/configmaps/visible.yaml") != ""
	})
	eventually(t, "EncryptionConfigured explains", func() bool {
		c := targetCondition(t, m.ns, m.target, v1alpha3.ConditionEncryptionConfigured)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == v1alpha3.ReasonEncryptionRequired
	})
	tree, err := env.git.Git(m.repo, "ls-tree", "-r", "--name-only", "main")
	require.NoError(t, err)
	require.NotContains(t, tree, "secrets/")
	grep, _ := env.git.Git(m.repo, "log", "-p", "--all")
	require.NotContains(t, grep, "hunter2", "no Secret value in any commit")
	require.NotContains(t, grep, "aHVudGVyMi1wbGFpbnRleHQ", "nor its base64")
	require.NoError(t, env.kube.Client().Delete(context.Background(), configMap(m.ns, "visible", nil)))
}
