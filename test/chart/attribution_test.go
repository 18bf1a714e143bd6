package chart

// Audit attribution in the chart: off by default (configured-author mode),
// and with attribution.enabled the ingress's flags, Service and certificates,
// and what a cluster admin gives kube-apiserver: the policy and a webhook
// kubeconfig that, with the client Secret's files, completes a mutual TLS
// handshake with the serving certificate.

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

const attributionOn = "attribution: {enabled: true}\n"

// operatorContainer is the operator's container of the rendered Deployment.
func operatorContainer(t *testing.T, objs []*unstructured.Unstructured) map[string]any {
	t.Helper()
	containers, _, _ := unstructured.NestedSlice(oneOfKind(t, objs, "Deployment").Object, "spec", "template", "spec", "containers")
	return containers[0].(map[string]any)
}

func containerArgs(t *testing.T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	var args []string
	for _, a := range operatorContainer(t, objs)["args"].([]any) {
		args = append(args, a.(string))
	}
	return args
}

func containerPortNames(t *testing.T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	var names []string
	for _, p := range operatorContainer(t, objs)["ports"].([]any) {
		names = append(names, p.(map[string]any)["name"].(string))
	}
	return names
}

func named(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range byKind(objs, kind) {
		if o.GetName() == name {
			return o
		}
	}
	require.Failf(t, "not rendered", "%s %s", kind, name)
	return nil
}

func TestAttributionOffRendersNoneOfIt(t *testing.T) {
	objs := render(t, "gr", "gitops-reverser", "")
	args := containerArgs(t, objs)
	require.Contains(t, args, "--author-attribution=false", "configured-author mode, though the binary defaults to on")
	for _, a := range args {
		require.False(t, strings.HasPrefix(a, "--audit-") || strings.HasPrefix(a, "--author-attribution-") ||
			strings.HasPrefix(a, "--replica-count"), "no attribution flag: %s", a)
	}
	require.NotContains(t, containerPortNames(t, objs), "audit")
	for _, o := range objs {
		require.NotContains(t, o.GetName(), "audit", "%s %s", o.GetKind(), o.GetName())
	}
	require.Empty(t, byKind(objs, "ConfigMap"))
}

func TestAttributionWithGeneratedCertificates(t *testing.T) {
	const ns = "gitops-reverser"
	objs := render(t, "gr", ns, attributionOn)

	dir := "/etc/gitops-reverser/audit"
	require.Subset(t, containerArgs(t, objs), []string{
		"--author-attribution=true", "--audit-bind-address=:9444",
		"--audit-cert-file=" + dir + "/tls.crt", "--audit-key-file=" + dir + "/tls.key", "--audit-client-ca-file=" + dir + "/ca.crt",
		"--author-attribution-transport=memory", "--replica-count=1",
		"--author-attribution-grace=3s", "--author-attribution-fact-ttl=10m",
	})
	require.NotContains(t, containerArgs(t, objs), "--author-attribution=false")
	require.Contains(t, containerPortNames(t, objs), "audit")
	volumes, _, _ := unstructured.NestedSlice(oneOfKind(t, objs, "Deployment").Object, "spec", "template", "spec", "volumes")
	require.Contains(t, volumes, map[string]any{"name": "audit-certs", "secret": map[string]any{"secretName": "gr-gitops-reverser-audit-serving"}})

	svc := named(t, objs, "Service", "gr-gitops-reverser-audit")
	ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	require.Equal(t, []any{map[string]any{"name": "audit", "port": int64(9444), "targetPort": "audit", "protocol": "TCP"}}, ports)

	serving := secretData(t, named(t, objs, "Secret", "gr-gitops-reverser-audit-serving"))
	client := secretData(t, named(t, objs, "Secret", "gr-gitops-reverser-audit-client"))
	require.Equal(t, serving["ca.crt"], client["ca.crt"], "one CA signs both")

	cm := named(t, objs, "ConfigMap", "gr-gitops-reverser-audit-apiserver")
	data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	policy, err := os.ReadFile(filepath.Join(chartDir(), "files", "audit-policy.yaml"))
	require.NoError(t, err)
	require.YAMLEq(t, string(policy), data["audit-policy.yaml"])

	kubeconfig, err := clientcmd.Load([]byte(data["audit-webhook.kubeconfig"]))
	require.NoError(t, err, "the webhook kubeconfig parses:\n%s", data["audit-webhook.kubeconfig"])
	cluster := kubeconfig.Clusters[kubeconfig.Contexts[kubeconfig.CurrentContext].Cluster]
	require.Equal(t, "https://gr-gitops-reverser-audit.gitops-reverser.svc:9444/audit-webhook/default", cluster.Server)

	// The admin copies the client Secret's files where the kubeconfig
	// names them (NOTES); the API server then handshakes with the ingress.
	configDir := t.TempDir()
	files := map[string]string{"ca.crt": client["ca.crt"], "client.crt": client["tls.crt"], "client.key": client["tls.key"]}
	for name, content := range files {
		require.NoError(t, os.WriteFile(filepath.Join(configDir, name), []byte(content), 0o600))
	}
	raw := strings.ReplaceAll(data["audit-webhook.kubeconfig"], "/etc/kubernetes/gitops-reverser/", configDir+"/")
	cfg, err := clientcmd.RESTConfigFromKubeConfig([]byte(raw))
	require.NoError(t, err)
	requireMutualTLS(t, cfg, serving)
}

// secretData is a rendered Secret's data, decoded.
func secretData(t *testing.T, s *unstructured.Unstructured) map[string]string {
	t.Helper()
	typ, _, _ := unstructured.NestedString(s.Object, "type")
	require.Equal(t, "kubernetes.io/tls", typ)
	raw, _, _ := unstructured.NestedStringMap(s.Object, "data")
	out := map[string]string{}
	for k, v := range raw {
		b, err := base64.StdEncoding.DecodeString(v)
		require.NoError(t, err, k)
		out[k] = string(b)
	}
	require.ElementsMatch(t, []string{"tls.crt", "tls.key", "ca.crt"}, keys(out))
	return out
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// requireMutualTLS serves the serving Secret's certificate the way the
// operator's ingress does (a client certificate signed by its ca.crt
// required) and posts to it with cfg, the API server's webhook config. The
// listener is on loopback; cfg's host name is kept as the name the serving
// certificate is verified for.
func requireMutualTLS(t *testing.T, cfg *rest.Config, serving map[string]string) {
	t.Helper()
	cert, err := tls.X509KeyPair([]byte(serving["tls.crt"]), []byte(serving["tls.key"]))
	require.NoError(t, err)
	clientCAs := x509.NewCertPool()
	require.True(t, clientCAs.AppendCertsFromPEM([]byte(serving["ca.crt"])))
	var gotPath string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.Len(t, r.TLS.PeerCertificates, 1)
		gotPath = r.URL.Path
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clientCAs}
	srv.StartTLS()
	defer srv.Close()

	u, err := url.Parse(cfg.Host)
	require.NoError(t, err)
	cfg.TLSClientConfig.ServerName = u.Hostname()
	rt, err := rest.TransportFor(cfg)
	require.NoError(t, err)
	loopback, err := url.Parse(srv.URL)
	require.NoError(t, err)
	u.Host = loopback.Host
	resp, err := (&http.Client{Transport: rt}).Post(u.String(), "application/json", strings.NewReader(`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[]}`))
	require.NoError(t, err, "the API server's client certificate is accepted and the serving certificate verified for %s", cfg.TLSClientConfig.ServerName)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "/audit-webhook/default", gotPath)
}

func TestAttributionWithCertManager(t *testing.T) {
	values := "attribution: {enabled: true, auditRoute: prod, certManager: {enabled: true}}\n"
	objs := render(t, "gr", "gitops-reverser", values, "--api-versions", "cert-manager.io/v1")
	require.Empty(t, byKind(objs, "Secret"), "cert-manager writes the Secrets")
	require.Len(t, byKind(objs, "Issuer"), 2, "a self-signed Issuer for the CA, a CA Issuer for the rest")
	require.Len(t, byKind(objs, "Certificate"), 3)

	servingCert := named(t, objs, "Certificate", "gr-gitops-reverser-audit-serving")
	spec, _, _ := unstructured.NestedMap(servingCert.Object, "spec")
	require.Equal(t, "gr-gitops-reverser-audit-serving", spec["secretName"], "the Secret the Deployment mounts")
	require.Contains(t, spec["dnsNames"], "gr-gitops-reverser-audit.gitops-reverser.svc")
	require.Contains(t, spec["usages"], "server auth")
	clientCert := named(t, objs, "Certificate", "gr-gitops-reverser-audit-client")
	spec, _, _ = unstructured.NestedMap(clientCert.Object, "spec")
	require.Equal(t, "gr-gitops-reverser-audit-client", spec["secretName"], "the Secret NOTES copies the kubeconfig's files from")
	require.Contains(t, spec["usages"], "client auth")
	ca := named(t, objs, "Certificate", "gr-gitops-reverser-audit-ca")
	isCA, _, _ := unstructured.NestedBool(ca.Object, "spec", "isCA")
	require.True(t, isCA)

	data, _, _ := unstructured.NestedStringMap(named(t, objs, "ConfigMap", "gr-gitops-reverser-audit-apiserver").Object, "data")
	kubeconfig, err := clientcmd.Load([]byte(data["audit-webhook.kubeconfig"]))
	require.NoError(t, err)
	require.Equal(t, "https://gr-gitops-reverser-audit.gitops-reverser.svc:9444/audit-webhook/prod", kubeconfig.Clusters["gitops-reverser-audit"].Server)
}

func TestAttributionRefusesToRender(t *testing.T) {
	cases := []struct {
		name   string
		values string
		extra  []string
		want   string
	}{
		{"cert-manager missing", "attribution: {enabled: true, certManager: {enabled: true}}\n", nil,
			"attribution.certManager.enabled=true needs cert-manager (the cert-manager.io/v1 API) in the cluster"},
		{"two replicas refused by the schema", "replicaCount: 2\n" + attributionOn, nil, "at '/redis/addr': minLength: got 0, want 1"},
		// The schema asks several replicas for Redis; the memory transport's
		// own check stays behind it.
		{"two replicas refused by the memory transport check", "replicaCount: 2\n" + attributionOn, []string{"--skip-schema-validation"},
			"attribution.enabled=true keeps audit facts in memory in one process (--author-attribution-transport=memory) and needs replicaCount: 1, not 2"},
		{"a route that is no name", "attribution: {enabled: true, auditRoute: Prod/x}\n", nil, "at '/attribution/auditRoute'"},
		{"a misspelled value", "attribution: {enabeld: true}\n", nil, "additional properties 'enabeld' not allowed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"template", "gr", chartDir()}, valuesFile(t, tc.values)...)
			out, err := helm(t, append(args, tc.extra...)...)
			require.Error(t, err, "rendered:\n%s", out)
			require.Contains(t, out, tc.want)
		})
	}
}

// TestAttributionCertificatesSurviveAnUpgrade installs the generated
// Secrets on the real API server and renders again against it (as helm
// upgrade does): the certificates are the ones the API server was given.
func TestAttributionCertificatesSurviveAnUpgrade(t *testing.T) {
	const ns = "attribution-upgrade"
	first := render(t, "gr", ns, attributionOn)
	install(t, byKind(first, "Secret"))

	kubeconfig, err := env.kube.Kubeconfig()
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(path, kubeconfig, 0o600))
	again := render(t, "gr", ns, attributionOn, "--dry-run=server", "--kubeconfig", path)
	for _, name := range []string{"gr-gitops-reverser-audit-serving", "gr-gitops-reverser-audit-client"} {
		require.Equal(t, secretData(t, named(t, first, "Secret", name)), secretData(t, named(t, again, "Secret", name)), name)
	}
	// The notes tell the admin how to copy exactly these objects' files
	// (a release and namespace of their own: helm install adopts no object
	// the other tests applied).
	const notesNS = "attribution-notes"
	ensureNamespace(t, notesNS)
	out, err := helm(t, append([]string{"install", "notes", chartDir(), "--namespace", notesNS, "--dry-run=server", "--kubeconfig", path},
		valuesFile(t, attributionOn)...)...)
	require.NoError(t, err, out)
	notes := out[strings.Index(out, "NOTES:"):]
	for _, want := range []string{
		"kubectl -n " + notesNS + " get configmap notes-gitops-reverser-audit-apiserver -o jsonpath='{.data.audit-webhook\\.kubeconfig}' > /etc/kubernetes/gitops-reverser/audit-webhook.kubeconfig",
		"kubectl -n " + notesNS + " get secret notes-gitops-reverser-audit-client -o jsonpath='{.data.tls\\.key}' | base64 -d > /etc/kubernetes/gitops-reverser/client.key",
		"--audit-webhook-batch-max-wait=1s",
		"https://notes-gitops-reverser-audit." + notesNS + ".svc:9444/audit-webhook/default",
	} {
		require.Contains(t, notes, want)
	}

	// Without the cluster, every render generates new ones.
	fresh := render(t, "gr", ns, attributionOn)
	require.NotEqual(t, secretData(t, named(t, first, "Secret", "gr-gitops-reverser-audit-client")),
		secretData(t, named(t, fresh, "Secret", "gr-gitops-reverser-audit-client")))
}
