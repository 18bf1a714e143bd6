package credentials_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/credentials"
)

const testNamespace = "team-a"

func secret(name string, secretType corev1.SecretType, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: name},
		Type:       secretType,
		Data:       map[string][]byte{},
	}
	for key, value := range data {
		s.Data[key] = []byte(value)
	}
	return s
}

func specWithSecret(name string) v1alpha3.GitProviderSpec {
	return v1alpha3.GitProviderSpec{URL: "https://git.example.com/a.git", SecretRef: &v1alpha3.LocalObjectReference{Name: name}}
}

func readFrom(t *testing.T, spec v1alpha3.GitProviderSpec, objects ...client.Object) (credentials.Credentials, error) {
	t.Helper()
	c := fake.NewClientBuilder().WithObjects(objects...).Build()
	return credentials.Read(context.Background(), c, testNamespace, spec)
}

func TestReadAcceptsEveryDialect(t *testing.T) {
	tests := []struct {
		name       string
		secretType corev1.SecretType
		data       map[string]string
		want       credentials.Credentials
	}{{
		name:       "kubernetes basic-auth",
		secretType: corev1.SecretTypeBasicAuth,
		data:       map[string]string{"username": "alice", "password": "s3cret"},
		want:       credentials.Credentials{Username: "alice", Password: "s3cret"},
	}, {
		name:       "kubernetes ssh-auth",
		secretType: corev1.SecretTypeSSHAuth,
		data:       map[string]string{"ssh-privatekey": "KEY"},
		want:       credentials.Credentials{SSHPrivateKey: []byte("KEY")},
	}, {
		name: "flux https with bearer token",
		data: map[string]string{"bearerToken": "tok\n"},
		want: credentials.Credentials{Token: "tok"},
	}, {
		name: "flux ssh: password is the key's passphrase, identity.pub ignored",
		data: map[string]string{"identity": "KEY", "identity.pub": "PUB", "known_hosts": "host ssh-ed25519 AAAA", "password": "pass"},
		want: credentials.Credentials{
			SSHPrivateKey: []byte("KEY"), SSHPassphrase: "pass", Password: "pass",
			KnownHosts: []byte("host ssh-ed25519 AAAA"),
		},
	}, {
		name: "argo cd https",
		data: map[string]string{"username": "bob", "password": "pw", "url": "https://git.example.com/a.git", "type": "git"},
		want: credentials.Credentials{Username: "bob", Password: "pw"},
	}, {
		name: "argo cd ssh",
		data: map[string]string{"sshPrivateKey": "KEY"},
		want: credentials.Credentials{SSHPrivateKey: []byte("KEY")},
	}, {
		name: "argo cd github app",
		data: map[string]string{"githubAppID": "123", "githubAppInstallationID": " 456\n", "githubAppPrivateKey": "PEM"},
		want: credentials.Credentials{GitHubApp: &credentials.GitHubApp{AppID: 123, InstallationID: 456, PrivateKey: []byte("PEM")}},
	}, {
		name: "operator github app and token",
		data: map[string]string{"appID": "7", "installationID": "8", "privateKey": "PEM", "token": "tok"},
		want: credentials.Credentials{Token: "tok", GitHubApp: &credentials.GitHubApp{AppID: 7, InstallationID: 8, PrivateKey: []byte("PEM")}},
	}, {
		name: "explicit passphrase wins over password",
		data: map[string]string{"identity": "KEY", "passphrase": "phrase", "password": "pw"},
		want: credentials.Credentials{SSHPrivateKey: []byte("KEY"), SSHPassphrase: "phrase", Password: "pw"},
	}, {
		name: "kubernetes key wins when two dialects name the ssh key",
		data: map[string]string{"ssh-privatekey": "NATIVE", "identity": "FLUX"},
		want: credentials.Credentials{SSHPrivateKey: []byte("NATIVE")},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := secret("creds", tt.secretType, tt.data)
			got, err := readFrom(t, specWithSecret("creds"), s)
			require.NoError(t, err)
			require.NotEmpty(t, got.ResourceVersion, "the Secret's version lets callers notice rotation")
			got.ResourceVersion = ""
			require.Equal(t, tt.want, got)
		})
	}
}

func TestReadWithoutSecretRefIsAnonymous(t *testing.T) {
	got, err := readFrom(t, v1alpha3.GitProviderSpec{URL: "https://git.example.com/a.git"})
	require.NoError(t, err)
	require.Equal(t, credentials.Credentials{}, got)
}

func TestReadMissingSecretNamesIt(t *testing.T) {
	_, err := readFrom(t, specWithSecret("absent"))
	require.ErrorIs(t, err, credentials.ErrSecretNotFound)
	require.ErrorContains(t, err, "Secret team-a/absent (spec.secretRef) not found")
}

func TestReadRefusesMalformedGitHubApp(t *testing.T) {
	tests := []struct {
		name    string
		data    map[string]string
		message string
	}{
		{"non-numeric app id", map[string]string{"githubAppID": "my-app", "githubAppInstallationID": "1", "githubAppPrivateKey": "PEM"}, `key "githubAppID" in Secret team-a/creds must be a positive integer`},
		{"negative installation id", map[string]string{"appID": "1", "installationID": "-4", "privateKey": "PEM"}, `key "installationID" in Secret team-a/creds must be a positive integer`},
		{"no installation id", map[string]string{"appID": "1", "privateKey": "PEM"}, "no installation id (installationID/githubAppInstallationID)"},
		{"no private key", map[string]string{"githubAppID": "1", "githubAppInstallationID": "2"}, "no private key (privateKey/githubAppPrivateKey)"},
		{"no app id", map[string]string{"githubAppInstallationID": "2", "githubAppPrivateKey": "PEM"}, "no App id (appID/githubAppID)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readFrom(t, specWithSecret("creds"), secret("creds", corev1.SecretTypeOpaque, tt.data))
			require.ErrorIs(t, err, credentials.ErrInvalidCredentials)
			require.ErrorContains(t, err, tt.message)
			require.NotContains(t, err.Error(), "my-app", "values stay out of errors")
		})
	}
}

func TestReadKnownHostsRef(t *testing.T) {
	sshSecret := secret("creds", corev1.SecretTypeSSHAuth, map[string]string{"ssh-privatekey": "KEY", "known_hosts": "from-secret"})
	configMap := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: "hosts"},
		Data:       map[string]string{"known_hosts": "from-configmap", "ssh_known_hosts": "argo-style"},
	}
	hostsSecret := secret("hosts", corev1.SecretTypeOpaque, map[string]string{"known_hosts": "from-hosts-secret"})
	tests := []struct {
		name string
		ref  v1alpha3.KnownHostsReference
		want string
	}{
		{"secret with the default key", v1alpha3.KnownHostsReference{Name: "hosts"}, "from-hosts-secret"},
		{"configmap with the default key", v1alpha3.KnownHostsReference{Kind: "ConfigMap", Name: "hosts"}, "from-configmap"},
		{"configmap with another key", v1alpha3.KnownHostsReference{Kind: "ConfigMap", Name: "hosts", Key: "ssh_known_hosts"}, "argo-style"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := specWithSecret("creds")
			spec.KnownHostsRef = &tt.ref
			got, err := readFrom(t, spec, sshSecret, configMap, hostsSecret)
			require.NoError(t, err)
			require.Equal(t, tt.want, string(got.KnownHosts), "an explicit knownHostsRef wins over the Secret's key")
			require.Equal(t, []byte("KEY"), got.SSHPrivateKey)
			require.NotEmpty(t, got.KnownHostsResourceVersion)
		})
	}
}

func TestReadKnownHostsRefMissing(t *testing.T) {
	configMap := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: "hosts"},
		Data:       map[string]string{"other": "x"},
	}
	tests := []struct {
		name    string
		ref     v1alpha3.KnownHostsReference
		message string
	}{
		{"missing configmap", v1alpha3.KnownHostsReference{Kind: "ConfigMap", Name: "absent"}, "ConfigMap team-a/absent (spec.knownHostsRef) not found"},
		{"missing key", v1alpha3.KnownHostsReference{Kind: "ConfigMap", Name: "hosts"}, `ConfigMap team-a/hosts (spec.knownHostsRef) has no key "known_hosts"`},
		{"missing secret", v1alpha3.KnownHostsReference{Name: "absent"}, "Secret team-a/absent (spec.knownHostsRef) not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := v1alpha3.GitProviderSpec{URL: "ssh://git@host/a.git", KnownHostsRef: &tt.ref}
			_, err := readFrom(t, spec, configMap)
			require.ErrorIs(t, err, credentials.ErrSecretNotFound)
			require.EqualError(t, err, tt.message)
		})
	}
}

func TestCredentialsStringRedactsValues(t *testing.T) {
	creds := credentials.Credentials{Username: "alice", Password: "s3cret", Token: "tok-value", SSHPrivateKey: []byte("KEY")}
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		text := fmt.Sprintf(format, creds)
		require.NotContains(t, text, "s3cret")
		require.NotContains(t, text, "tok-value")
		require.Contains(t, text, "password")
	}
}
