package watch_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/configbutler/gitops-reverser/internal/watch"
)

// TestStreamReportsForbiddenUntilGrantedThenReplays runs a stream as a
// ServiceAccount the API server's RBAC refuses: the refusal is reported
// (once, with the API server's message), the stream keeps retrying, and
// once a Role grants list and watch it replays and the refusal clears.
func TestStreamReportsForbiddenUntilGrantedThenReplays(t *testing.T) {
	const ns, sa = "denied", "mirror"
	createNamespace(t, ns, "a")
	client, err := dynamic.NewForConfig(kube.ConfigAsServiceAccount(ns, sa))
	require.NoError(t, err)

	refusals := make(chan watch.Forbidden, 10)
	events := make(chan watch.Event, 100)
	stream := &watch.Stream{
		Client:      client,
		Scope:       watch.Scope{GVR: configMaps, Namespace: ns},
		Log:         testr.New(t),
		MinBackoff:  20 * time.Millisecond,
		MaxBackoff:  100 * time.Millisecond,
		OnForbidden: func(f watch.Forbidden) { refusals <- f },
		Handler: func(_ context.Context, ev watch.Event) error {
			if ev.Kind != watch.ReplayStart { // one per retry while refused
				events <- ev
			}
			return nil
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- stream.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})

	var refusal watch.Forbidden
	select {
	case refusal = <-refusals:
	case <-time.After(10 * time.Second):
		require.FailNow(t, "no Forbidden reported within 10s")
	}
	require.Equal(t, stream.Scope, refusal.Scope)
	require.Contains(t, refusal.Message, `User "system:serviceaccount:denied:mirror" cannot watch resource "configmaps"`)
	require.NotNil(t, stream.Forbidden(), "the refusal stays reported between retries")

	grantListWatch(t, ns, sa)
	ev := next(t, events)
	require.Equal(t, watch.Upsert, ev.Kind, "after the grant the retry replays")
	require.Equal(t, "a", ev.Object.GetName())
	require.Equal(t, watch.Synced, next(t, events).Kind)
	require.Nil(t, stream.Forbidden(), "a connect that succeeds ends the refusal")
	require.Empty(t, refusals, "one report per refusal spell, not one per retry")
}

// grantListWatch lets the ServiceAccount list and watch ConfigMaps in ns.
func grantListWatch(t *testing.T, ns, sa string) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, kube.Client().Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mirror"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list", "watch"}}},
	}))
	require.NoError(t, kube.Client().Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mirror"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "mirror"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa}},
	}))
}
