package chart

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// redisValues point the chart at an existing Redis over TLS, with an ACL
// user whose password is in a Secret.
const redisValues = `redis:
  addr: rediss://valkey.data.svc:6380
  username: gitops
  existingSecret: valkey-auth
  passwordKey: gitops-password
  tls: {caSecret: valkey-ca}
`

// container is the Deployment's operator container.
func container(t *testing.T, objs []*unstructured.Unstructured) (map[string]any, []any) {
	t.Helper()
	pod, _, _ := unstructured.NestedMap(oneOfKind(t, objs, "Deployment").Object, "spec", "template", "spec")
	volumes, _ := pod["volumes"].([]any)
	return pod["containers"].([]any)[0].(map[string]any), volumes
}

func volumeNamed(volumes []any, name string) map[string]any {
	for _, v := range volumes {
		if v.(map[string]any)["name"] == name {
			return v.(map[string]any)
		}
	}
	return nil
}

func TestTemplateRedis(t *testing.T) {
	t.Run("off by default", func(t *testing.T) {
		c, volumes := container(t, render(t, "gr", "gitops-reverser", "attribution: {enabled: true}\n"))
		for _, arg := range c["args"].([]any) {
			require.NotContains(t, arg, "--redis-")
		}
		require.Contains(t, c["args"], "--author-attribution-transport=memory")
		require.Nil(t, volumeNamed(volumes, "redis-password"))
	})
	t.Run("an existing Redis with TLS and an ACL user whose password is in a Secret", func(t *testing.T) {
		c, volumes := container(t, render(t, "gr", "ops", redisValues+"attribution: {enabled: true}\n"))
		args := c["args"]
		require.Contains(t, args, "--redis-addr=rediss://valkey.data.svc:6380")
		require.Contains(t, args, "--redis-username=gitops")
		require.Contains(t, args, "--redis-password-file=/etc/gitops-reverser/redis/password")
		require.Contains(t, args, "--redis-ca-file=/etc/gitops-reverser/redis-ca/ca.crt")
		require.Contains(t, args, "--redis-key-prefix=gitops-reverser:ops/gr-gitops-reverser:", "one prefix per installation")
		require.Contains(t, args, "--author-attribution-transport=redis")
		password := volumeNamed(volumes, "redis-password")["secret"].(map[string]any)
		require.Equal(t, "valkey-auth", password["secretName"])
		require.Equal(t, []any{map[string]any{"key": "gitops-password", "path": "password"}}, password["items"])
		ca := volumeNamed(volumes, "redis-ca")["secret"].(map[string]any)
		require.Equal(t, "valkey-ca", ca["secretName"])
		require.Equal(t, []any{map[string]any{"key": "ca.crt", "path": "ca.crt"}}, ca["items"])
	})
	t.Run("a key prefix of its own and no password", func(t *testing.T) {
		c, volumes := container(t, render(t, "gr", "ops", "redis: {addr: 'redis:6379', keyPrefix: 'blue:'}\n"))
		require.Contains(t, c["args"], "--redis-key-prefix=blue:")
		require.Nil(t, volumeNamed(volumes, "redis-password"))
		require.Nil(t, volumeNamed(volumes, "redis-ca"))
	})
	t.Run("a password in the address is refused", func(t *testing.T) {
		args := append([]string{"template", "gr", chartDir()}, valuesFile(t, "redis: {addr: 'redis://gitops:s3cret@redis:6379'}\n")...)
		out, err := helm(t, args...)
		require.Error(t, err, out)
		require.Contains(t, out, "/redis/addr")
	})
}
