package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/configbutler/gitops-reverser/test/harness"
)

// TestDemoSmoke runs `make demo` in smoke mode: the samples reach Git, and
// everything stops again.
func TestDemoSmoke(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	dir := t.TempDir()
	out := &harness.SyncBuffer{}

	require.NoError(t, run(ctx, config{Dir: dir, Smoke: true, Out: out}), out.String())

	_, files := workloads()
	for _, f := range files {
		require.Contains(t, out.String(), "      "+f+"\n", "the mirrored tree lists %s", f)
	}
	require.Contains(t, out.String(), "LOG_LEVEL: info", "the printed file")
	require.Contains(t, out.String(), "GitOps Reverser Reconcile demo/demo-mirror", "the printed history")
	require.NoFileExists(t, filepath.Join(dir, "kubeconfig"))
	requireRemoteKept(t, dir, out, mirrorPath+"/demo/configmaps/app-config.yaml")
}

// TestDemoFollowsNewCommitsUntilCancelled is the interactive demo: a
// ConfigMap created through the printed kubeconfig shows up as a new
// commit, and cancelling (Ctrl-C) stops everything without an error.
func TestDemoFollowsNewCommitsUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	dir := t.TempDir()
	out := &harness.SyncBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, config{Dir: dir, Out: out}) }()
	waitForOutput(t, out, done, "Ctrl-C stops everything")

	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "kubeconfig"))
	require.NoError(t, err)
	c, err := client.New(cfg, client.Options{})
	require.NoError(t, err)
	require.NoError(t, c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "hello"},
		Data: map[string]string{"greeting": "hi"}}))
	waitForOutput(t, out, done, "--> new commit ")
	waitForOutput(t, out, done, "      A "+mirrorPath+"/demo/configmaps/hello.yaml\n")

	cancel()
	require.NoError(t, <-done, out.String())
	require.NoFileExists(t, filepath.Join(dir, "kubeconfig"))
	requireRemoteKept(t, dir, out, mirrorPath+"/demo/configmaps/hello.yaml")
}

// requireRemoteKept checks that the stopped demo kept its Git remote, said
// where, and that a clone of it holds file.
func requireRemoteKept(t *testing.T, dir string, out *harness.SyncBuffer, file string) {
	t.Helper()
	_, said, found := strings.Cut(out.String(), "==> The Git remote stays at ")
	require.True(t, found, "the demo says where its Git remote stays:\n%s", out.String())
	remote, _, _ := strings.Cut(said, ";")
	require.True(t, strings.HasPrefix(remote, filepath.Join(dir, "git")+string(filepath.Separator)), remote)
	require.Contains(t, said, "look at it with: git clone "+remote+"\n")
	clone := filepath.Join(t.TempDir(), "clone")
	cloneOut, err := exec.Command("git", "clone", "--quiet", remote, clone).CombinedOutput()
	require.NoError(t, err, string(cloneOut))
	require.FileExists(t, filepath.Join(clone, filepath.FromSlash(file)))
}

// TestTheBuildNoteAppearsOnlyWhenABuildIsNeeded: the control plane's start
// names the long first build only while its binaries are not cached.
func TestTheBuildNoteAppearsOnlyWhenABuildIsNeeded(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("GITOPS_REVERSER_TOOLS_CACHE", cache)
	require.Contains(t, controlPlaneStartNote(), "about 25 minutes", "nothing cached")

	for name, version := range map[string]string{"etcd": harness.EtcdVersion, "kube-apiserver": harness.KubeAPIServerVersion} {
		binary := filepath.Join(cache, name+"-"+version, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(binary), 0o755))
		require.NoError(t, os.WriteFile(binary, []byte("#!/bin/sh\n"), 0o755))
	}
	require.Equal(t, "Starting etcd and kube-apiserver", controlPlaneStartNote(), "both cached")
}

// waitForOutput waits until the running demo printed text, failing when it
// ends first.
func waitForOutput(t *testing.T, out *harness.SyncBuffer, done <-chan error, text string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for !strings.Contains(out.String(), text) {
		select {
		case err := <-done:
			t.Fatalf("the demo ended (%v) before printing %q:\n%s", err, text, out.String())
		case <-time.After(100 * time.Millisecond):
		}
		require.True(t, time.Now().Before(deadline), "the demo did not print %q:\n%s", text, out.String())
	}
}
