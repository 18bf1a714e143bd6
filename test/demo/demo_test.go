package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestDemoSmoke runs `make demo` in smoke mode: the samples reach Git, and
// everything stops again.
func TestDemoSmoke(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	dir := t.TempDir()
	out := &syncBuffer{}

	require.NoError(t, run(ctx, config{Dir: dir, Smoke: true, Out: out}), out.String())

	_, files := workloads()
	for _, f := range files {
		require.Contains(t, out.String(), "      "+f+"\n", "the mirrored tree lists %s", f)
	}
	require.Contains(t, out.String(), "LOG_LEVEL: info", "the printed file")
	require.Contains(t, out.String(), "GitOps Reverser Reconcile demo/demo-mirror", "the printed history")
	require.NoFileExists(t, filepath.Join(dir, "kubeconfig"))
	require.NoDirExists(t, filepath.Join(dir, "git"))
}

// TestDemoFollowsNewCommitsUntilCancelled is the interactive demo: a
// ConfigMap created through the printed kubeconfig shows up as a new
// commit, and cancelling (Ctrl-C) stops everything without an error.
func TestDemoFollowsNewCommitsUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	dir := t.TempDir()
	out := &syncBuffer{}
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
	require.Contains(t, out.String(), "Stopped; removed the demo data")
	require.NoFileExists(t, filepath.Join(dir, "kubeconfig"))
}

// waitForOutput waits until the running demo printed text, failing when it
// ends first.
func waitForOutput(t *testing.T, out *syncBuffer, done <-chan error, text string) {
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

// syncBuffer is the demo's output, read while the demo writes it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
