package credentials_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/credentials"
)

// TestReadFromTheAPIServer reads a built-in typed Secret and a known_hosts
// ConfigMap as the API server stores them, and sees a rotation as a new
// resource version.
func TestReadFromTheAPIServer(t *testing.T) {
	ctx := context.Background()
	c := kube.Client()
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNamespace}}))
	creds := secret("git-basic", corev1.SecretTypeBasicAuth, map[string]string{"username": "alice", "password": "first"})
	require.NoError(t, c.Create(ctx, creds))
	require.NoError(t, c.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: "ssh-known-hosts"},
		Data:       map[string]string{"known_hosts": "[127.0.0.1]:2222 ssh-ed25519 AAAA"},
	}))
	spec := specWithSecret("git-basic")
	spec.KnownHostsRef = &v1alpha3.KnownHostsReference{Kind: "ConfigMap", Name: "ssh-known-hosts"}

	got, err := credentials.Read(ctx, c, testNamespace, spec)
	require.NoError(t, err)
	require.Equal(t, "alice", got.Username)
	require.Equal(t, "first", got.Password)
	require.Equal(t, "[127.0.0.1]:2222 ssh-ed25519 AAAA", string(got.KnownHosts))
	require.Equal(t, creds.ResourceVersion, got.ResourceVersion)

	creds.Data["password"] = []byte("rotated")
	require.NoError(t, c.Update(ctx, creds))
	rotated, err := credentials.Read(ctx, c, testNamespace, spec)
	require.NoError(t, err)
	require.Equal(t, "rotated", rotated.Password)
	require.NotEqual(t, got.ResourceVersion, rotated.ResourceVersion, "a rotated Secret reads with a new version")

	_, err = credentials.Read(ctx, c, testNamespace, specWithSecret("not-created"))
	require.ErrorIs(t, err, credentials.ErrSecretNotFound)
	require.ErrorContains(t, err, "Secret team-a/not-created (spec.secretRef) not found")
}
