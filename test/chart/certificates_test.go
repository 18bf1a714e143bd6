package chart

// The audit certificates across renders: a Secret the admin manages
// (attribution.existingSecret) makes every render the same, as a GitOps
// renderer needs; cert-manager's Certificates live long where a renewal
// means copying files to the control plane; and an address kube-apiserver
// can reach joins the serving certificate.

import (
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
)

const existingSecretValues = "attribution: {enabled: true, existingSecret: my-audit-tls}\n"

// TestAnExistingSecretMakesEveryRenderTheSame: with the admin's Secret the
// chart generates nothing, so two renders without a cluster (helm
// template, as Argo CD renders) are byte for byte the same, and the
// Deployment mounts that Secret.
func TestAnExistingSecretMakesEveryRenderTheSame(t *testing.T) {
	args := append([]string{"template", "gr", chartDir(), "--namespace", "gitops-reverser"}, valuesFile(t, existingSecretValues)...)
	first, err := helm(t, args...)
	require.NoError(t, err, first)
	second, err := helm(t, args...)
	require.NoError(t, err, second)
	require.Equal(t, first, second, "nothing generated, nothing different")

	objs := parseObjects(t, first)
	require.Empty(t, byKind(objs, "Secret"), "the admin's Secret, none of the chart's")
	require.Empty(t, byKind(objs, "Certificate"))
	require.Empty(t, byKind(objs, "Issuer"))
	volumes, _, _ := unstructured.NestedSlice(oneOfKind(t, objs, "Deployment").Object, "spec", "template", "spec", "volumes")
	require.Contains(t, volumes, map[string]any{"name": "audit-certs", "secret": map[string]any{"secretName": "my-audit-tls"}})
	require.Subset(t, containerArgs(t, objs), []string{"--audit-cert-file=/etc/gitops-reverser/audit/tls.crt",
		"--audit-client-ca-file=/etc/gitops-reverser/audit/ca.crt"})
	named(t, objs, "ConfigMap", "gr-gitops-reverser-audit-apiserver")
}

func TestAnExistingSecretIsNotAlsoIssuedByCertManager(t *testing.T) {
	values := "attribution: {enabled: true, existingSecret: my-audit-tls, certManager: {enabled: true}}\n"
	args := append([]string{"template", "gr", chartDir(), "--api-versions", "cert-manager.io/v1"}, valuesFile(t, values)...)
	out, err := helm(t, args...)
	require.Error(t, err, out)
	require.Contains(t, out, "attribution.existingSecret names a Secret you manage, attribution.certManager.enabled has cert-manager issue one: set only one of them")
}

// TestCertManagerCertificatesLiveLongWhereRenewalIsManual: the CA and the
// client certificate kube-apiserver presents (copied to the nodes by hand)
// last certificateValidityDays, and a renewed CA keeps its key; the
// serving certificate, which renews by itself, has servingDuration.
func TestCertManagerCertificatesLiveLongWhereRenewalIsManual(t *testing.T) {
	for _, tc := range []struct {
		name, values            string
		longLived, servingLasts string
	}{
		{"defaults", "attribution: {enabled: true, certManager: {enabled: true}}\n", "87600h", "2160h"},
		{"chosen", "attribution: {enabled: true, certificateValidityDays: 730, certManager: {enabled: true, servingDuration: 720h}}\n",
			"17520h", "720h"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := render(t, "gr", "gitops-reverser", tc.values, "--api-versions", "cert-manager.io/v1")
			duration := func(name string) string {
				d, _, _ := unstructured.NestedString(named(t, objs, "Certificate", name).Object, "spec", "duration")
				return d
			}
			require.Equal(t, tc.longLived, duration("gr-gitops-reverser-audit-ca"))
			require.Equal(t, tc.longLived, duration("gr-gitops-reverser-audit-client"))
			require.Equal(t, tc.servingLasts, duration("gr-gitops-reverser-audit-serving"))
			policy, _, _ := unstructured.NestedString(named(t, objs, "Certificate", "gr-gitops-reverser-audit-ca").Object,
				"spec", "privateKey", "rotationPolicy")
			require.Equal(t, "Never", policy, "a renewed CA still verifies what kube-apiserver was given")
		})
	}
}

// TestTheWebhookURLsAddressJoinsTheServingCertificate: kube-apiserver as a
// static Pod cannot resolve a .svc name, so it is given an address; that
// address (an IP, or a name) is in the serving certificate, generated or
// issued, and the handshake by it succeeds.
func TestTheWebhookURLsAddressJoinsTheServingCertificate(t *testing.T) {
	values := "attribution:\n  enabled: true\n  service: {clusterIP: 10.96.0.244}\n" +
		"  webhookURL: https://10.96.0.244:9444/audit-webhook/default\n  extraIPAddresses: [192.0.2.7]\n"
	objs := render(t, "gr", "gitops-reverser", values)
	ip, _, _ := unstructured.NestedString(named(t, objs, "Service", "gr-gitops-reverser-audit").Object, "spec", "clusterIP")
	require.Equal(t, "10.96.0.244", ip)
	serving := secretData(t, named(t, objs, "Secret", "gr-gitops-reverser-audit-serving"))
	leaf := parseCertificate(t, serving["tls.crt"])
	require.ElementsMatch(t, []string{"10.96.0.244", "192.0.2.7"}, ipStrings(leaf.IPAddresses))
	require.Contains(t, leaf.DNSNames, "gr-gitops-reverser-audit.gitops-reverser.svc", "the Service's names stay")

	data, _, _ := unstructured.NestedStringMap(named(t, objs, "ConfigMap", "gr-gitops-reverser-audit-apiserver").Object, "data")
	client := secretData(t, named(t, objs, "Secret", "gr-gitops-reverser-audit-client"))
	configDir := t.TempDir()
	for name, content := range map[string]string{"ca.crt": client["ca.crt"], "client.crt": client["tls.crt"], "client.key": client["tls.key"]} {
		require.NoError(t, os.WriteFile(filepath.Join(configDir, name), []byte(content), 0o600))
	}
	raw := strings.ReplaceAll(data["audit-webhook.kubeconfig"], "/etc/kubernetes/gitops-reverser/", configDir+"/")
	cfg, err := clientcmd.RESTConfigFromKubeConfig([]byte(raw))
	require.NoError(t, err)
	require.Equal(t, "https://10.96.0.244:9444/audit-webhook/default", cfg.Host)
	requireMutualTLS(t, cfg, serving)

	byName := "attribution: {enabled: true, webhookURL: \"https://audit.cp.example:30444/audit-webhook/default\", certManager: {enabled: true}}\n"
	objs = render(t, "gr", "gitops-reverser", byName, "--api-versions", "cert-manager.io/v1")
	spec, _, _ := unstructured.NestedMap(named(t, objs, "Certificate", "gr-gitops-reverser-audit-serving").Object, "spec")
	require.Contains(t, spec["dnsNames"], "audit.cp.example")
	require.NotContains(t, spec, "ipAddresses")

	byIP := "attribution: {enabled: true, webhookURL: \"https://10.96.0.244:9444/audit-webhook/default\", certManager: {enabled: true}}\n"
	objs = render(t, "gr", "gitops-reverser", byIP, "--api-versions", "cert-manager.io/v1")
	spec, _, _ = unstructured.NestedMap(named(t, objs, "Certificate", "gr-gitops-reverser-audit-serving").Object, "spec")
	require.Equal(t, []any{"10.96.0.244"}, spec["ipAddresses"])
	require.NotContains(t, spec["dnsNames"], "10.96.0.244")
}

func parseCertificate(t *testing.T, pemText string) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode([]byte(pemText))
	require.NotNil(t, block)
	cert, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	return cert
}

func ipStrings(ips []net.IP) []string {
	var out []string
	for _, ip := range ips {
		out = append(out, ip.String())
	}
	return out
}
