package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/configbutler/gitops-reverser/internal/manifest"
)

// TestLongNamesAreMirroredIntoFilesACheckoutCanCreate mirrors ConfigMaps
// with the longest names Kubernetes allows (253 characters, 258 bytes with
// .yaml: more than a file system's 255) and checks out the mirror with the
// git binary. The two names differ only in their last character, so only
// the hash in their shortened file names keeps them apart. Each file is then
// updated and removed where it is, live and after a restart, when a fresh
// index has to find it again by the identity inside it.
func TestLongNamesAreMirroredIntoFilesACheckoutCanCreate(t *testing.T) {
	m := newMirror(t, "longnames", "configmaps")
	stop := startOperator(t)
	waitReady(t, m.ns, m.target)
	ctx := context.Background()
	stem := strings.Repeat("app-config-", 23)[:252]
	liveName, offlineName := stem+"a", stem+"b"
	dir := m.path + "/longnames/configmaps/"
	livePath := dir + manifest.FitSegment(liveName, ".yaml")
	offlinePath := dir + manifest.FitSegment(offlineName, ".yaml")
	require.Len(t, liveName, 253)

	apply(t, configMap(m.ns, liveName, map[string]string{"v": "1"}), configMap(m.ns, offlineName, map[string]string{"v": "1"}))
	eventually(t, "both long-named ConfigMaps in Git", func() bool {
		return gitFile(t, m.repo, livePath) != "" && gitFile(t, m.repo, offlinePath) != ""
	})
	require.ElementsMatch(t, []string{livePath, offlinePath}, gitTree(t, m.repo, dir), "one file each:\n%s", gitLog(t, m.repo))
	clone := checkout(t, m.repo) // fails when git cannot create a file
	for _, p := range []string{livePath, offlinePath} {
		require.LessOrEqual(t, len(filepath.Base(p)), manifest.MaxSegmentBytes)
		content, err := os.ReadFile(filepath.Join(clone, filepath.FromSlash(p)))
		require.NoError(t, err, "the checkout holds %s", p)
		require.Equal(t, gitFile(t, m.repo, p), string(content), "the checkout holds the committed bytes")
	}

	updateConfigMap(t, m.ns, liveName, "2")
	eventually(t, "the live update in the same file", func() bool {
		return containsLine(gitFile(t, m.repo, livePath), `  v: "2"`)
	})

	stop()
	updateConfigMap(t, m.ns, offlineName, "2")
	require.NoError(t, env.kube.Client().Delete(ctx, configMap(m.ns, liveName, nil)))
	stop = startOperator(t)
	eventually(t, "the offline update in the same file and the offline delete swept", func() bool {
		return containsLine(gitFile(t, m.repo, offlinePath), `  v: "2"`) && gitFile(t, m.repo, livePath) == ""
	})
	require.Equal(t, []string{offlinePath}, gitTree(t, m.repo, dir), "found again, not written anew:\n%s", gitLog(t, m.repo))

	require.NoError(t, env.kube.Client().Delete(ctx, configMap(m.ns, offlineName, nil)))
	eventually(t, "the live delete removes the file", func() bool { return gitFile(t, m.repo, offlinePath) == "" })
	require.Empty(t, gitTree(t, m.repo, dir))
	stop()
}

func updateConfigMap(t *testing.T, ns, name, value string) {
	t.Helper()
	ctx := context.Background()
	var cm corev1.ConfigMap
	require.NoError(t, env.kube.Client().Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &cm))
	cm.Data["v"] = value
	require.NoError(t, env.kube.Client().Update(ctx, &cm))
}

// gitTree lists the files under dir at the branch head.
func gitTree(t *testing.T, repo, dir string) []string {
	t.Helper()
	out, err := env.git.Git(repo, "ls-tree", "-r", "--name-only", "main", "--", dir)
	require.NoError(t, err)
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}
