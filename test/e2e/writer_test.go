package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// TestAScaleOfAHandKeptDeploymentChangesOneLine: a human has commented the
// Deployment's file; a scale through the /scale subresource (what
// `kubectl scale` does) reaches Git as a one-line diff: the replicas value,
// with its comment, and every other byte kept.
func TestAScaleOfAHandKeptDeploymentChangesOneLine(t *testing.T) {
	m := newMirror(t, "scaled", "deployments")
	path := mirroredDeployment(t, m)

	written := gitFile(t, m.repo, path)
	handKept := "# The shop's web frontend.\n# Scaled by the on-call engineer.\n" +
		strings.Replace(strings.Replace(written, "  replicas: 2\n", "\n  # floor for the sale\n  replicas: 2 # on-call decides\n", 1),
			"      containers:\n", "      containers:\n      # one container only\n", 1)
	pushExternalCommit(t, m.repo, path, handKept)

	scaleThroughSubresource(t, m.ns, "web", 4)

	eventually(t, "the scale in Git", func() bool { return containsLine(gitFile(t, m.repo, path), "  replicas: 4 # on-call decides") })
	require.Equal(t, strings.Replace(handKept, "replicas: 2 #", "replicas: 4 #", 1), gitFile(t, m.repo, path),
		"only the replicas value changed")
}

// TestAScaleGovernedByAReplicasEntryEditsTheEntry: the human lists the
// Deployment's file in a kustomization with a replicas: entry for it; a
// scale through /scale updates the entry's count (comment kept), the
// manifest keeps its bytes, and `kustomize build` of the folder renders the
// scaled Deployment after the commit.
func TestAScaleGovernedByAReplicasEntryEditsTheEntry(t *testing.T) {
	m := newMirror(t, "kscaled", "deployments")
	source := mirroredDeployment(t, m)
	manifest := strings.Replace(gitFile(t, m.repo, source), "  replicas: 2\n", "  replicas: 1 # the kustomization decides\n", 1)
	kustomization := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- kscaled/apps/deployments/web.yaml\n" +
		"replicas:\n- name: web\n  count: 2 # production\n"
	_, err := env.git.CommitFiles(m.repo, map[string]string{source: manifest, m.path + "/kustomization.yaml": kustomization}, "human adds a kustomization")
	require.NoError(t, err)

	scaleThroughSubresource(t, m.ns, "web", 4)

	eventually(t, "the scale in the replicas: entry", func() bool {
		return containsLine(gitFile(t, m.repo, m.path+"/kustomization.yaml"), "  count: 4 # production")
	})
	require.Equal(t, strings.Replace(kustomization, "count: 2 #", "count: 4 #", 1), gitFile(t, m.repo, m.path+"/kustomization.yaml"))
	require.Equal(t, manifest, gitFile(t, m.repo, source), "the manifest keeps its bytes")

	fs := filesys.MakeFsInMemory()
	require.NoError(t, fs.MkdirAll("/kscaled/apps/deployments"))
	require.NoError(t, fs.WriteFile("/kustomization.yaml", []byte(gitFile(t, m.repo, m.path+"/kustomization.yaml"))))
	require.NoError(t, fs.WriteFile("/kscaled/apps/deployments/web.yaml", []byte(gitFile(t, m.repo, source))))
	built, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, "/")
	require.NoError(t, err)
	out, err := built.AsYaml()
	require.NoError(t, err)
	require.True(t, containsLine(string(out), "  replicas: 4"), "the build renders the scaled Deployment:\n%s", out)
}

// mirroredDeployment creates the Deployment web with two replicas, starts
// the operator and returns its file once it is in Git.
func mirroredDeployment(t *testing.T, m mirrorSetup) string {
	t.Helper()
	labels := map[string]string{"app": "web"}
	apply(t, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "web"}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}}},
	}})
	startOperator(t)
	path := m.path + "/" + m.ns + "/apps/deployments/web.yaml"
	eventually(t, "the Deployment in Git", func() bool { return containsLine(gitFile(t, m.repo, path), "  replicas: 2") })
	return path
}

// scaleThroughSubresource sets a Deployment's replicas through /scale, as
// `kubectl scale` does.
func scaleThroughSubresource(t *testing.T, ns, name string, replicas int32) {
	t.Helper()
	var d appsv1.Deployment
	require.NoError(t, env.kube.Client().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &d))
	scale := &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: replicas}}
	require.NoError(t, env.kube.Client().SubResource("scale").Update(context.Background(), &d, client.WithSubResourceBody(scale)))
}

// TestANewObjectGoesBesideTheFoldersKustomization: the target's path holds
// one kustomization; a new ConfigMap is written beside it and listed in its
// resources: in the same commit, the kustomization's comments kept, and the
// folder still builds. Deleting the ConfigMap takes the entry away again.
func TestANewObjectGoesBesideTheFoldersKustomization(t *testing.T) {
	m := newMirror(t, "kplaced", "configmaps")
	kustomization := "# Built by Flux.\napiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [] # filled by the operator\n"
	pushExternalCommit(t, m.repo, m.path+"/kustomization.yaml", kustomization)
	startOperator(t)
	apply(t, configMap(m.ns, "settings", map[string]string{"mode": "fast"}))

	placed := m.path + "/kplaced-configmap-settings.yaml"
	eventually(t, "the ConfigMap beside the kustomization", func() bool { return gitFile(t, m.repo, placed) != "" })
	listed := gitFile(t, m.repo, m.path+"/kustomization.yaml")
	require.Equal(t, "# Built by Flux.\napiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"+
		"resources: [kplaced-configmap-settings.yaml] # filled by the operator\n", listed)
	fs := filesys.MakeFsInMemory()
	require.NoError(t, fs.WriteFile("/kustomization.yaml", []byte(listed)))
	require.NoError(t, fs.WriteFile("/kplaced-configmap-settings.yaml", []byte(gitFile(t, m.repo, placed))))
	built, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, "/")
	require.NoError(t, err)
	require.Len(t, built.Resources(), 1)
	require.Empty(t, gitFile(t, m.repo, m.path+"/kplaced/configmaps/settings.yaml"), "nothing at the canonical path")

	require.NoError(t, env.kube.Client().Delete(context.Background(), configMap(m.ns, "settings", nil)))
	eventually(t, "the entry gone with the file", func() bool {
		return gitFile(t, m.repo, placed) == "" && gitFile(t, m.repo, m.path+"/kustomization.yaml") == kustomization
	})
}

// A folder kustomize builds into a namespace: its documents name none. The
// live object is the document, edited in place without a namespace, and the
// folder still builds to one object.
func TestAKustomizationsNamespaceIsTheNamespaceOfItsDocuments(t *testing.T) {
	m := newMirror(t, "knamespaced", "configmaps")
	kustomization := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: knamespaced\nresources: [settings.yaml]\n"
	settings := "# Tuned by hand.\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: fast # the default\n"
	_, err := env.git.CommitFiles(m.repo, map[string]string{
		m.path + "/kustomization.yaml": kustomization, m.path + "/settings.yaml": settings}, "human edit")
	require.NoError(t, err)
	apply(t, configMap(m.ns, "settings", map[string]string{"mode": "fast"}))
	startOperator(t)
	waitReady(t, m.ns, m.target)

	live := configMap(m.ns, "settings", nil)
	edit(t, live, func() { live.Data["mode"] = "slow" })

	eventually(t, "the change in the namespace-less document", func() bool {
		return gitFile(t, m.repo, m.path+"/settings.yaml") == strings.Replace(settings, "mode: fast", "mode: slow", 1)
	})
	require.Equal(t, kustomization, gitFile(t, m.repo, m.path+"/kustomization.yaml"), "no second file listed")
	require.Empty(t, gitFile(t, m.repo, m.path+"/knamespaced-configmap-settings.yaml"), "nothing beside it")
	require.Empty(t, gitFile(t, m.repo, m.path+"/knamespaced/configmaps/settings.yaml"), "nothing at the canonical path")
	fs := filesys.MakeFsInMemory()
	require.NoError(t, fs.WriteFile("/kustomization.yaml", []byte(kustomization)))
	require.NoError(t, fs.WriteFile("/settings.yaml", []byte(gitFile(t, m.repo, m.path+"/settings.yaml"))))
	built, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, "/")
	require.NoError(t, err)
	require.Len(t, built.Resources(), 1)
	require.Equal(t, "knamespaced", built.Resources()[0].GetNamespace())
}
