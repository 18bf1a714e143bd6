package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// serviceAccountToken creates the ServiceAccount ns/name, lets it write
// ConfigMaps in ns, and returns a token for it from the TokenRequest API.
func serviceAccountToken(t *testing.T, ns, name string) string {
	t.Helper()
	ctx := context.Background()
	apply(t,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "create", "update", "patch", "delete"}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}}},
	)
	token, err := env.kube.ServiceAccountToken(ctx, ns, name)
	require.NoError(t, err)
	return token
}

func clientFor(t *testing.T, cfg *rest.Config) client.Client {
	t.Helper()
	c, err := client.New(cfg, client.Options{Scheme: env.kube.Scheme()})
	require.NoError(t, err)
	return c
}

// TestActorsWithTheirOwnCredentialsAuthorTheirChanges: no impersonation,
// so each audit event names its actor as the authenticated user: a user
// with a client certificate and a service account with a TokenRequest
// token each author their own change.
func TestActorsWithTheirOwnCredentialsAuthorTheirChanges(t *testing.T) {
	m := newMirror(t, "attr-own-credentials", "configmaps")
	token := serviceAccountToken(t, m.ns, "robot")
	certCfg, err := env.kube.ConfigAsCertificateUser("carol-cert", "system:masters")
	require.NoError(t, err)
	byCertificate, byToken := clientFor(t, certCfg), clientFor(t, env.kube.ConfigWithToken(token))
	startOperatorWith(t, withAttribution(10*time.Second))
	waitReady(t, m.ns, m.target)
	ctx := context.Background()
	dir := m.path + "/attr-own-credentials/configmaps/"

	require.NoError(t, byCertificate.Create(ctx, configMap(m.ns, "by-certificate", map[string]string{"v": "1"})))
	require.NoError(t, byToken.Create(ctx, configMap(m.ns, "by-token", map[string]string{"v": "1"})))
	eventually(t, "both ConfigMaps in Git", func() bool {
		return gitFile(t, m.repo, dir+"by-certificate.yaml") != "" && gitFile(t, m.repo, dir+"by-token.yaml") != ""
	})
	require.Equal(t, gitAuthor("carol-cert"), authorOf(t, m, dir+"by-certificate.yaml"), "\n%s", gitLog(t, m.repo))
	require.Equal(t, gitAuthor("system:serviceaccount:attr-own-credentials:robot"), authorOf(t, m, dir+"by-token.yaml"),
		"\n%s", gitLog(t, m.repo))
}
