package redisconn_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/redisconn"
	"github.com/configbutler/gitops-reverser/test/harness"
)

func TestClientOptionsParseTheAddress(t *testing.T) {
	cases := []struct {
		name, addr, caFile string
		wantAddr, wantUser string
		wantPassword       string
		wantDB             int
		wantTLS            bool
		wantErr            string
	}{
		{name: "host and port", addr: "redis.default:6379", wantAddr: "redis.default:6379"},
		{name: "redis URL with database", addr: "redis://redis:6380/2", wantAddr: "redis:6380", wantDB: 2},
		{name: "rediss URL", addr: "rediss://redis:6380", wantAddr: "redis:6380", wantTLS: true},
		{name: "URL credentials", addr: "redis://ops:s3cret@redis:6379", wantAddr: "redis:6379", wantUser: "ops", wantPassword: "s3cret"},
		{name: "no address", addr: "", wantErr: "no Redis address"},
		{name: "other scheme", addr: "unix://ops:s3cret@/tmp/redis.sock", wantErr: "want redis://"},
		{name: "CA without TLS", addr: "redis://ops:s3cret@redis:6379", caFile: "/ca.pem", wantErr: "not a rediss:// URL"},
		{name: "bad URL keeps the password out", addr: "redis://ops:s3cret@redis:6379/notanumber", wantErr: "ops:xxxxx@redis"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			opts, err := redisconn.Options{Addr: c.addr, CAFile: c.caFile}.ClientOptions()
			if c.wantErr != "" {
				require.ErrorContains(t, err, c.wantErr)
				require.NotContains(t, err.Error(), "s3cret")
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.wantAddr, opts.Addr)
			require.Equal(t, c.wantUser, opts.Username)
			require.Equal(t, c.wantPassword, opts.Password)
			require.Equal(t, c.wantDB, opts.DB)
			require.Equal(t, c.wantTLS, opts.TLSConfig != nil)
		})
	}
}

// ping connects with o and pings: nil once the settings reach Redis.
func ping(t *testing.T, o redisconn.Options) error {
	t.Helper()
	client, err := o.Connect()
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.Close() })
	return client.Ping(context.Background()).Err()
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

func startRedis(t *testing.T, opts harness.RedisOptions) *harness.Redis {
	t.Helper()
	server, err := harness.StartRedisWith(t.TempDir(), opts)
	require.NoError(t, err)
	t.Cleanup(server.Stop)
	return server
}

func TestPingWithThePasswordOfTheDefaultUser(t *testing.T) {
	server := startRedis(t, harness.RedisOptions{Password: "from-a-secret"})
	cases := []struct {
		name    string
		opts    redisconn.Options
		wantErr bool
	}{
		{name: "password file", opts: redisconn.Options{Addr: server.URL(), PasswordFile: writeFile(t, "password", "from-a-secret\n")}},
		{name: "password flag or env", opts: redisconn.Options{Addr: server.Addr(), Password: "from-a-secret"}},
		{name: "no password", opts: redisconn.Options{Addr: server.Addr()}, wantErr: true},
		{name: "wrong password", opts: redisconn.Options{Addr: server.Addr(), PasswordFile: writeFile(t, "wrong", "nope")}, wantErr: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := ping(t, c.opts)
			if c.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
		})
	}
}

func TestPingAsAnACLUser(t *testing.T) {
	server := startRedis(t, harness.RedisOptions{User: "gitops", UserPassword: "acl-secret"})
	password := writeFile(t, "password", "acl-secret")
	require.NoError(t, ping(t, redisconn.Options{Addr: server.Addr(), Username: "gitops", PasswordFile: password}))
	require.NoError(t, ping(t, redisconn.Options{Addr: "redis://gitops:acl-secret@" + server.Addr()}))
	require.Error(t, ping(t, redisconn.Options{Addr: server.Addr(), Username: "someone-else", PasswordFile: password}))
}

func TestPingOverTLSCheckedAgainstTheCA(t *testing.T) {
	dir := t.TempDir()
	ca, err := harness.NewCA("redis-ca")
	require.NoError(t, err)
	pair, err := ca.Server(dir, "redis", "127.0.0.1")
	require.NoError(t, err)
	caFile, err := ca.WriteCert(dir, "ca.crt")
	require.NoError(t, err)
	server := startRedis(t, harness.RedisOptions{TLS: &pair, CAPEM: ca.CertPEM, Password: "tls-secret"})

	require.NoError(t, ping(t, redisconn.Options{Addr: server.URL(), CAFile: caFile, Password: "tls-secret"}))
	require.ErrorContains(t, ping(t, redisconn.Options{Addr: server.URL(), Password: "tls-secret"}), "certificate",
		"a server certificate from an unknown CA is refused")
	require.Error(t, ping(t, redisconn.Options{Addr: server.Addr(), Password: "tls-secret"}), "plain TCP to a TLS port fails")
}
