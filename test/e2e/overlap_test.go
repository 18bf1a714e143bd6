package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/operator"
)

// TestTwoTeamsOnOneRepositoryCannotShareAPath: two namespaces, each with
// its own GitProvider for the same repository (spelled with and without
// .git), and GitTargets on the same branch whose paths nest. The older
// target keeps the path and mirrors; the younger says PathOverlap naming
// it and writes nothing. Deleting the older one hands the path over at once
// (the deletion is watched; there is no periodic resync in this test).
func TestTwoTeamsOnOneRepositoryCannotShareAPath(t *testing.T) {
	older := newMirror(t, "team-older", "configmaps")
	apply(t, configMap(older.ns, "kept", map[string]string{"k": "v"}))
	// No periodic resync: only the watches can hand the path over.
	startOperatorWith(t, func(o *operator.Options) { o.TargetResync = time.Hour })
	eventually(t, "the older target's ConfigMap in Git", func() bool {
		return gitFile(t, older.repo, older.path+"/team-older/configmaps/kept.yaml") != ""
	})
	waitReady(t, older.ns, older.target)

	const younger = "team-younger"
	sameRepository := strings.TrimSuffix(env.git.HTTPURL(older.repo), ".git")
	require.NotEqual(t, env.git.HTTPURL(older.repo), sameRepository)
	apply(t,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: younger}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: younger, Name: "git-credentials"},
			StringData: map[string]string{"username": gitUser, "password": gitPassword}},
		gitProvider(younger, "same-repo", sameRepository),
		configMap(younger, "theirs", map[string]string{"k": "v"}),
		&v1alpha3.GitTarget{ObjectMeta: metav1.ObjectMeta{Namespace: younger, Name: "wide"},
			Spec: v1alpha3.GitTargetSpec{ProviderRef: v1alpha3.GitProviderReference{Name: "same-repo"}, Branch: "main", Path: "clusters"}},
		watchRule(younger, "rule", "wide", "configmaps"),
	)
	eventually(t, "the younger target refused, naming the older", func() bool {
		c := targetCondition(t, younger, "wide", v1alpha3.ConditionValidated)
		return c != nil && c.Reason == v1alpha3.ReasonPathOverlap
	})
	c := targetCondition(t, younger, "wide", v1alpha3.ConditionValidated)
	require.Contains(t, c.Message, older.ns+"/"+older.target, "the condition names the target that holds the path")
	require.Contains(t, c.Message, "delete this GitTarget and create it again", "the way out, as spec.path is immutable")
	require.Equal(t, metav1.ConditionTrue, conditionStatus(t, younger, "wide", v1alpha3.ConditionStalled))

	// The older target's next commit is the sentinel: had the younger been
	// writing, its replay would have swept the older one's files or added
	// its own by now.
	apply(t, configMap(older.ns, "later", map[string]string{"k": "v"}))
	eventually(t, "the older target's next commit", func() bool {
		return gitFile(t, older.repo, older.path+"/team-older/configmaps/later.yaml") != ""
	})
	require.NotEmpty(t, gitFile(t, older.repo, older.path+"/team-older/configmaps/kept.yaml"), "the older target's files stay:\n%s", gitLog(t, older.repo))
	require.Empty(t, gitFile(t, older.repo, "clusters/"+younger+"/configmaps/theirs.yaml"), "the younger target wrote:\n%s", gitLog(t, older.repo))
	waitReady(t, older.ns, older.target)

	var holder v1alpha3.GitTarget
	require.NoError(t, env.kube.Client().Get(context.Background(), client.ObjectKey{Namespace: older.ns, Name: older.target}, &holder))
	require.NoError(t, env.kube.Client().Delete(context.Background(), &holder))
	eventually(t, "the younger target takes the path over and mirrors", func() bool {
		return gitFile(t, older.repo, "clusters/"+younger+"/configmaps/theirs.yaml") != ""
	})
	waitReady(t, younger, "wide")
}

// TestAnOlderTargetWhoseProviderAppearsTakesItsPathBack: an older target
// without a GitProvider writes nothing and holds nothing, so a younger one
// in another namespace mirrors the path meanwhile. Once the older one's
// GitProvider (for the same repository) exists, the older target keeps
// the path and the younger is refused at once: the GitProvider is watched
// for every target of its repository.
func TestAnOlderTargetWhoseProviderAppearsTakesItsPathBack(t *testing.T) {
	const repo, older, younger = "reclaim", "reclaim-a", "reclaim-b"
	_, err := env.git.CreateBareRepo(repo)
	require.NoError(t, err)
	credentials := func(ns string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "git-credentials"},
			StringData: map[string]string{"username": gitUser, "password": gitPassword}}
	}
	target := func(ns, path string) *v1alpha3.GitTarget {
		return &v1alpha3.GitTarget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mirror"},
			Spec: v1alpha3.GitTargetSpec{ProviderRef: v1alpha3.GitProviderReference{Name: "repo"}, Branch: "main", Path: path}}
	}
	// The older target is created first and its namespace sorts first, so
	// it is older even when both are created within one second.
	apply(t,
		&v1alpha3.ClusterProvider{ObjectMeta: metav1.ObjectMeta{Name: "default"},
			Spec: v1alpha3.ClusterProviderSpec{AllowedNamespaces: &v1alpha3.NamespacePolicy{Selector: &metav1.LabelSelector{}}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: older}}, credentials(older), target(older, "clusters/a"),
		watchRule(older, "rule", "mirror", "configmaps"), configMap(older, "mine", map[string]string{"k": "v"}),
	)
	apply(t,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: younger}}, credentials(younger),
		gitProvider(younger, "repo", strings.TrimSuffix(env.git.HTTPURL(repo), ".git")), target(younger, "clusters"),
		watchRule(younger, "rule", "mirror", "configmaps"), configMap(younger, "theirs", map[string]string{"k": "v"}),
	)
	startOperatorWith(t, func(o *operator.Options) { o.TargetResync = time.Hour })
	eventually(t, "the younger target mirrors while the older has no GitProvider", func() bool {
		return gitFile(t, repo, "clusters/"+younger+"/configmaps/theirs.yaml") != ""
	})

	apply(t, gitProvider(older, "repo", env.git.HTTPURL(repo)))
	eventually(t, "the younger target refused, naming the older", func() bool {
		c := targetCondition(t, younger, "mirror", v1alpha3.ConditionValidated)
		return c != nil && c.Reason == v1alpha3.ReasonPathOverlap && strings.Contains(c.Message, older+"/mirror")
	})
	eventually(t, "the older target mirrors its path", func() bool {
		return gitFile(t, repo, "clusters/a/"+older+"/configmaps/mine.yaml") != ""
	})
	waitReady(t, older, "mirror")
}

// TestAnOlderTargetWhoseCredentialsCannotWorkHoldsNoPath: a tenant in
// another namespace points a GitProvider with a wrong password at this
// repository and creates a GitTarget with path "." before the owner does.
// That provider never becomes Ready and its target never commits, so it
// holds no path: the owner's younger target on the same repository and
// branch mirrors. (It used to be refused with PathOverlap naming the
// tenant's target.)
func TestAnOlderTargetWhoseCredentialsCannotWorkHoldsNoPath(t *testing.T) {
	const repo, intruder, owner = "squatted", "squat-intruder", "squat-owner"
	_, err := env.git.CreateBareRepo(repo)
	require.NoError(t, err)
	ctx := context.Background()
	// The intruder's namespace sorts first, so its target is the older one
	// even when both are created within one second.
	apply(t,
		&v1alpha3.ClusterProvider{ObjectMeta: metav1.ObjectMeta{Name: "default"},
			Spec: v1alpha3.ClusterProviderSpec{AllowedNamespaces: &v1alpha3.NamespacePolicy{Selector: &metav1.LabelSelector{}}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: intruder}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: intruder, Name: "git-credentials"},
			StringData: map[string]string{"username": gitUser, "password": "wrong"}},
		gitProvider(intruder, "repo", strings.TrimSuffix(env.git.HTTPURL(repo), ".git")),
		&v1alpha3.GitTarget{ObjectMeta: metav1.ObjectMeta{Namespace: intruder, Name: "everything"},
			Spec: v1alpha3.GitTargetSpec{ProviderRef: v1alpha3.GitProviderReference{Name: "repo"}, Branch: "main", Path: "."}},
	)
	// No periodic resync: only the watches decide.
	startOperatorWith(t, func(o *operator.Options) { o.TargetResync = time.Hour })
	eventually(t, "the intruder's provider refused", func() bool {
		var gp v1alpha3.GitProvider
		if env.kube.Client().Get(ctx, client.ObjectKey{Namespace: intruder, Name: "repo"}, &gp) != nil {
			return false
		}
		c := meta.FindStatusCondition(gp.Status.Conditions, v1alpha3.ConditionReady)
		return c != nil && c.Reason == v1alpha3.ReasonUnauthorized
	})
	eventually(t, "the intruder's target waits for its provider", func() bool {
		c := targetCondition(t, intruder, "everything", v1alpha3.ConditionReady)
		return c != nil && c.Reason == v1alpha3.ReasonGitProviderNotReady
	})

	m := mirrorSetup{ns: owner, repo: repo, target: "mirror", path: "clusters"}
	apply(t,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: owner}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: owner, Name: "git-credentials"},
			StringData: map[string]string{"username": gitUser, "password": gitPassword}},
		gitProvider(owner, "repo", env.git.HTTPURL(repo)),
		configMap(owner, "mine", map[string]string{"k": "v"}),
		&v1alpha3.GitTarget{ObjectMeta: metav1.ObjectMeta{Namespace: owner, Name: m.target},
			Spec: v1alpha3.GitTargetSpec{ProviderRef: v1alpha3.GitProviderReference{Name: "repo"}, Branch: "main", Path: m.path}},
		watchRule(owner, "rule", m.target, "configmaps"),
	)
	eventually(t, "the owner's ConfigMap in Git", func() bool {
		return gitFile(t, repo, m.path+"/"+owner+"/configmaps/mine.yaml") != ""
	})
	waitReady(t, owner, m.target)
	var squatter v1alpha3.GitTarget
	require.NoError(t, env.kube.Client().Get(ctx, client.ObjectKey{Namespace: intruder, Name: "everything"}, &squatter))
	require.Nil(t, squatter.Status.LastCommit, "the intruder's target never wrote")
}

// TestAnOlderTargetAdmittedLaterTakesItsPathBack: an older target whose
// ClusterProvider does not admit its namespace is refused by its own
// checks and holds no path, so a younger one in another namespace mirrors
// meanwhile. Once its ClusterProvider admits it, the younger one is
// checked again without a periodic resync (no GitProvider changed; the
// older target's status change is watched) and refused.
func TestAnOlderTargetAdmittedLaterTakesItsPathBack(t *testing.T) {
	const repo, older, younger, narrow = "admitted-later", "admit-a", "admit-b", "admit-narrow"
	_, err := env.git.CreateBareRepo(repo)
	require.NoError(t, err)
	credentials := func(ns string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "git-credentials"},
			StringData: map[string]string{"username": gitUser, "password": gitPassword}}
	}
	olderTarget := &v1alpha3.GitTarget{ObjectMeta: metav1.ObjectMeta{Namespace: older, Name: "mirror"},
		Spec: v1alpha3.GitTargetSpec{ProviderRef: v1alpha3.GitProviderReference{Name: "repo"}, Branch: "main", Path: "clusters",
			ClusterProviderRef: &v1alpha3.ClusterProviderReference{Name: narrow}}}
	// The older target is created first and its namespace sorts first.
	apply(t,
		&v1alpha3.ClusterProvider{ObjectMeta: metav1.ObjectMeta{Name: "default"},
			Spec: v1alpha3.ClusterProviderSpec{AllowedNamespaces: &v1alpha3.NamespacePolicy{Selector: &metav1.LabelSelector{}}}},
		&v1alpha3.ClusterProvider{ObjectMeta: metav1.ObjectMeta{Name: narrow},
			Spec: v1alpha3.ClusterProviderSpec{AllowedNamespaces: &v1alpha3.NamespacePolicy{Names: []string{"nobody"}}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: older}}, credentials(older),
		gitProvider(older, "repo", env.git.HTTPURL(repo)), olderTarget,
	)
	apply(t,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: younger}}, credentials(younger),
		gitProvider(younger, "repo", env.git.HTTPURL(repo)),
		&v1alpha3.GitTarget{ObjectMeta: metav1.ObjectMeta{Namespace: younger, Name: "mirror"},
			Spec: v1alpha3.GitTargetSpec{ProviderRef: v1alpha3.GitProviderReference{Name: "repo"}, Branch: "main", Path: "clusters/b"}},
		watchRule(younger, "rule", "mirror", "configmaps"), configMap(younger, "theirs", map[string]string{"k": "v"}),
	)
	startOperatorWith(t, func(o *operator.Options) { o.TargetResync = time.Hour })
	eventually(t, "the older target refused by its ClusterProvider", func() bool {
		c := targetCondition(t, older, "mirror", v1alpha3.ConditionClusterProviderReady)
		return c != nil && c.Reason == v1alpha3.ReasonNamespaceNotAllowed
	})
	eventually(t, "the younger target mirrors while the older is not admitted", func() bool {
		return gitFile(t, repo, "clusters/b/"+younger+"/configmaps/theirs.yaml") != ""
	})

	cp := v1alpha3.ClusterProvider{ObjectMeta: metav1.ObjectMeta{Name: narrow}}
	edit(t, &cp, func() { cp.Spec.AllowedNamespaces.Names = []string{older} })
	eventually(t, "the younger target refused, naming the older", func() bool {
		c := targetCondition(t, younger, "mirror", v1alpha3.ConditionValidated)
		return c != nil && c.Reason == v1alpha3.ReasonPathOverlap && strings.Contains(c.Message, older+"/mirror")
	})
	waitReady(t, older, "mirror")
}
