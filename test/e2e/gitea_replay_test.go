package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"code.gitea.io/sdk/gitea"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
)

// TestAReplayIsOneGiteaCommitWhateverTheWindow: a GitTarget following ten
// namespaces through a selector (a watch stream each) with a 1 ms commit
// window commits its cold start as one commit through the Gitea forge, and
// the changes made while it was stopped as one more. (With three
// namespaces of five ConfigMaps the replays came too close together to
// tell; ten of twenty made two commits before the replay held its window.)
func TestAReplayIsOneGiteaCommitWhateverTheWindow(t *testing.T) {
	g := sharedGitea(t)
	const name = "gitea-replay"
	repo, err := g.CreateRepo(name, false) // empty: the first push makes main
	require.NoError(t, err)
	owner := repo.Owner.UserName
	ns := "replay-control"
	label := map[string]string{"replay-fleet": "yes"}
	objects := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&v1alpha3.ClusterProvider{ObjectMeta: metav1.ObjectMeta{Name: "default"},
			Spec: v1alpha3.ClusterProviderSpec{AllowedNamespaces: &v1alpha3.NamespacePolicy{Selector: &metav1.LabelSelector{}}}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gitea-token"}, StringData: map[string]string{"token": g.Token()}},
		&v1alpha3.GitProvider{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gitea"}, Spec: v1alpha3.GitProviderSpec{
			URL: g.HTTPCloneURL(owner, name), Forge: &v1alpha3.ForgeSpec{Type: v1alpha3.ForgeGitea},
			SecretRef: &v1alpha3.LocalObjectReference{Name: "gitea-token"}, AllowedBranches: []string{"main"},
			Push: v1alpha3.PushSpec{CommitWindow: &metav1.Duration{Duration: time.Millisecond}},
		}},
		&v1alpha3.GitTarget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mirror"}, Spec: v1alpha3.GitTargetSpec{
			ProviderRef: v1alpha3.GitProviderReference{Name: "gitea"}, Branch: "main", Path: "live",
			AllowedSourceNamespaces: &v1alpha3.NamespacePolicy{Selector: &metav1.LabelSelector{MatchLabels: label}}}},
		&v1alpha3.WatchRule{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "configmaps"}, Spec: v1alpha3.WatchRuleSpec{
			TargetRef: v1alpha3.TargetReference{Name: "mirror"},
			Rules: []v1alpha3.NamespacedResourceRule{{ResourceSelector: v1alpha3.ResourceSelector{Resources: []string{"configmaps"}},
				SourceNamespace: "*"}}}},
	}
	const namespaces, perNamespace = 10, 20
	for i := range namespaces {
		fleetNS := fmt.Sprintf("replay-fleet-%d", i)
		objects = append(objects, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fleetNS, Labels: label}})
		for j := range perNamespace {
			objects = append(objects, configMap(fleetNS, fmt.Sprintf("cm-%d", j), map[string]string{"v": "1"}))
		}
	}
	apply(t, objects...)

	api := g.Client()
	commits := func() []*gitea.Commit {
		// Gitea answers "Git Repository is empty" for a moment after the
		// first push, until its queue has caught up.
		list, _, err := api.ListRepoCommits(owner, name, gitea.ListCommitOptions{SHA: "main"})
		if err != nil {
			return nil
		}
		return list
	}
	files := func() map[string]bool {
		tree, _, err := api.GetTrees(owner, name, gitea.ListTreeOptions{Ref: "main", Recursive: true})
		found := map[string]bool{}
		if err != nil {
			return found
		}
		for _, entry := range tree.Entries {
			found[entry.Path] = true
		}
		return found
	}
	stop := startOperator(t)
	waitReady(t, ns, "mirror")
	eventually(t, "every ConfigMap in Gitea", func() bool {
		mirrored := 0
		for path := range files() {
			if strings.HasPrefix(path, "live/replay-fleet-") && strings.HasSuffix(path, ".yaml") {
				mirrored++
			}
		}
		return mirrored == namespaces*perNamespace
	})
	eventually(t, "gitea listing the commits", func() bool { return len(commits()) > 0 })
	require.Len(t, commits(), 1, "the cold start of ten streams is one commit")
	stop()

	require.NoError(t, env.kube.Client().Delete(t.Context(), configMap("replay-fleet-1", "cm-2", nil)))
	var cm corev1.ConfigMap
	require.NoError(t, env.kube.Client().Get(t.Context(), client.ObjectKey{Namespace: "replay-fleet-2", Name: "cm-3"}, &cm))
	cm.Data["v"] = "2"
	require.NoError(t, env.kube.Client().Update(t.Context(), &cm))

	startOperator(t)
	eventually(t, "the offline changes in Gitea", func() bool {
		content, _, err := api.GetFile(owner, name, "main", "live/replay-fleet-2/configmaps/cm-3.yaml")
		return err == nil && containsLine(string(content), `  v: "2"`) && !files()["live/replay-fleet-1/configmaps/cm-2.yaml"]
	})
	require.Len(t, commits(), 2, "the restart's reconcile of ten streams is one commit")
}
