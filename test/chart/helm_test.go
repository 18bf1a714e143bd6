package chart

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Test keys: shaped like the real thing, since the schema checks the PEM
// header; the operator never parses them in these tests.
const (
	fakePrivateKey = "-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----\n"
	fakeRSAKey     = "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n"
	fakeKnownHosts = "github.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n"
)

// variant is one set of values: the default, or one credentials kind.
type variant struct {
	name   string
	values string // a values file's content; "" is the chart's defaults
}

func variants() []variant {
	return []variant{
		{"defaults", ""},
		{"existingSecret", "credentials: {type: existingSecret, existingSecret: my-forge-creds}\n"},
		{"githubApp", fmt.Sprintf("credentials:\n  type: githubApp\n  githubApp:\n    appID: 1000000\n    installationID: \"7890123\"\n    privateKey: %q\n", fakeRSAKey)},
		{"token", "credentials: {type: token, namespace: team-a, token: {token: glpat-abc}}\n"},
		{"ssh", fmt.Sprintf("credentials:\n  type: ssh\n  ssh:\n    privateKey: %q\n    knownHosts: %q\n", fakePrivateKey, fakeKnownHosts)},
		{"mirrorAllTypes", "rbac: {mirrorAllTypes: true}\n"},
		{"generateSigningKeys", "rbac: {generateSigningKeys: true}\n"},
		{"generateEncryptionKeys", "rbac: {generateEncryptionKeys: true}\n"},
		{"noLeaderElection", "operator: {leaderElect: false, additionalSensitiveResources: [sealedsecrets.bitnami.com]}\n"},
		{"serviceMonitor", "metrics: {serviceMonitor: {enabled: true, labels: {release: prom}}}\n"},
		{"attribution", "attribution: {enabled: true}\n"},
		{"attributionExistingSecret", existingSecretValues},
		// 10.0.0.0/24 is kube-apiserver's default Service range (the harness's).
		{"attributionByAddress", "attribution: {enabled: true, service: {clusterIP: 10.0.0.244}, " +
			"webhookURL: \"https://10.0.0.244:9444/audit-webhook/default\"}\n"},
		{"attributionAdmission", "attribution: {enabled: true, source: admission}\n"},
		{"attributionBoth", "attribution: {enabled: true, source: both, admission: {timeoutSeconds: 1}}\n"},
		{"redis", redisValues},
		{"credentialNamespaces", "rbac: {credentialNamespaces: [team-a, team-b], generateSigningKeys: true}\n"},
		{"clusterWideSecrets", "rbac: {clusterWideSecrets: true, generateEncryptionKeys: true}\n"},
		{"namespacedMirror", "rbac: {mirroredResources: [{apiGroups: [\"\"], resources: [configmaps]}, " +
			"{apiGroups: [\"\"], resources: [secrets], namespaces: [team-a, team-b]}]}\n"},
	}
}

// helm runs the Helm CLI on the chart and returns its combined output.
func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(env.helm, args...)
	// An empty HOME/XDG keeps the user's Helm repositories and plugins out.
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home, "XDG_CACHE_HOME="+home, "XDG_DATA_HOME="+home)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// valuesFile writes a values file; "" returns no arguments.
func valuesFile(t *testing.T, content string) []string {
	t.Helper()
	if content == "" {
		return nil
	}
	path := filepath.Join(t.TempDir(), "values.yaml")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return []string{"-f", path}
}

// render runs helm template for release in namespace and parses the objects.
func render(t *testing.T, release, namespace, values string, extra ...string) []*unstructured.Unstructured {
	t.Helper()
	args := append([]string{"template", release, chartDir(), "--namespace", namespace}, valuesFile(t, values)...)
	out, err := helm(t, append(args, extra...)...)
	require.NoError(t, err, "helm template:\n%s", out)
	return parseObjects(t, out)
}

func parseObjects(t *testing.T, manifests string) []*unstructured.Unstructured {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewBufferString(manifests)))
	var objs []*unstructured.Unstructured
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs
		}
		require.NoError(t, err)
		js, err := yaml.YAMLToJSON(doc)
		require.NoError(t, err)
		if len(bytes.TrimSpace(js)) == 0 || string(js) == "null" {
			continue
		}
		// Unstructured's own JSON decoding keeps integers int64.
		u := &unstructured.Unstructured{}
		require.NoError(t, u.UnmarshalJSON(js))
		objs = append(objs, u)
	}
}

func byKind(objs []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

func oneOfKind(t *testing.T, objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	t.Helper()
	found := byKind(objs, kind)
	require.Len(t, found, 1, "one %s", kind)
	return found[0]
}

func TestLintEveryVariant(t *testing.T) {
	for _, v := range variants() {
		t.Run(v.name, func(t *testing.T) {
			out, err := helm(t, append([]string{"lint", "--strict", chartDir()}, valuesFile(t, v.values)...)...)
			require.NoError(t, err, "helm lint:\n%s", out)
			require.Contains(t, out, "0 chart(s) failed")
		})
	}
}

func TestTemplateDefaults(t *testing.T) {
	objs := render(t, "gr", "gitops-reverser", "")
	require.Empty(t, byKind(objs, "Secret"), "no credentials Secret by default")
	require.Empty(t, byKind(objs, "ServiceMonitor"))
	require.Empty(t, byKind(objs, "CustomResourceDefinition"), "CRDs come from crds/, not templates")
	oneOfKind(t, objs, "ServiceAccount")
	oneOfKind(t, objs, "ClusterRole")
	oneOfKind(t, objs, "ClusterRoleBinding")
	require.Len(t, byKind(objs, "Role"), 2, "the leader election Role and the release namespace's Secrets Role")
	require.Len(t, byKind(objs, "Service"), 2, "metrics and the admission webhook")
	vwc := oneOfKind(t, objs, "ValidatingWebhookConfiguration")
	hooks, _, _ := unstructured.NestedSlice(vwc.Object, "webhooks")
	require.Len(t, hooks, 1)
	hook := hooks[0].(map[string]any)
	require.Equal(t, "Ignore", hook["failurePolicy"], "the webhook never blocks a request")
	require.Equal(t, "/validate-operator-types", hook["clientConfig"].(map[string]any)["service"].(map[string]any)["path"])

	d := oneOfKind(t, objs, "Deployment")
	replicas, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
	require.EqualValues(t, 1, replicas)
	pod, _, _ := unstructured.NestedMap(d.Object, "spec", "template", "spec")
	podSC := pod["securityContext"].(map[string]any)
	require.Equal(t, true, podSC["runAsNonRoot"])
	require.Equal(t, "RuntimeDefault", podSC["seccompProfile"].(map[string]any)["type"])
	c := pod["containers"].([]any)[0].(map[string]any)
	sc := c["securityContext"].(map[string]any)
	require.Equal(t, true, sc["readOnlyRootFilesystem"])
	require.Equal(t, false, sc["allowPrivilegeEscalation"])
	require.Equal(t, []any{"ALL"}, sc["capabilities"].(map[string]any)["drop"])
	require.Equal(t, "/healthz", c["livenessProbe"].(map[string]any)["httpGet"].(map[string]any)["path"])
	require.Equal(t, "/readyz", c["readinessProbe"].(map[string]any)["httpGet"].(map[string]any)["path"])
	require.Contains(t, c["args"], "--operator-namespace=$(POD_NAMESPACE)")
	require.Contains(t, c["args"], "--leader-elect=true")
	require.Contains(t, c["args"], "--admission-webhook-port=9443")
	require.Contains(t, c["args"], "--admission-webhook-configuration=gr-gitops-reverser")
	require.Contains(t, c["args"], "--admission-webhook-service-host=gr-gitops-reverser-admission.gitops-reverser.svc")
	env := map[string]map[string]any{}
	for _, e := range c["env"].([]any) {
		env[e.(map[string]any)["name"].(string)] = e.(map[string]any)["valueFrom"].(map[string]any)
	}
	require.Equal(t, "metadata.namespace", env["POD_NAMESPACE"]["fieldRef"].(map[string]any)["fieldPath"])
	require.Equal(t, "metadata.name", env["POD_NAME"]["fieldRef"].(map[string]any)["fieldPath"], "the replica's name")
	require.Equal(t, "limits.memory", env["GOMEMLIMIT"]["resourceFieldRef"].(map[string]any)["resource"])

	rules, _, _ := unstructured.NestedSlice(oneOfKind(t, objs, "ClusterRole").Object, "rules")
	for _, r := range rules {
		require.NotContains(t, r.(map[string]any)["apiGroups"], "*", "no wildcard without rbac.mirrorAllTypes")
	}
}

func TestTemplateCredentialsVariants(t *testing.T) {
	cases := []struct {
		variant string
		ns      string
		typ     string
		data    map[string]string
	}{
		{"githubApp", "gitops-reverser", "Opaque", map[string]string{"appID": "1000000", "installationID": "7890123", "privateKey": fakeRSAKey}},
		{"token", "team-a", "Opaque", map[string]string{"token": "glpat-abc"}},
		{"ssh", "gitops-reverser", "kubernetes.io/ssh-auth", map[string]string{"ssh-privatekey": fakePrivateKey, "known_hosts": fakeKnownHosts}},
	}
	all := map[string]string{}
	for _, v := range variants() {
		all[v.name] = v.values
	}
	for _, tc := range cases {
		t.Run(tc.variant, func(t *testing.T) {
			s := oneOfKind(t, render(t, "gr", "gitops-reverser", all[tc.variant]), "Secret")
			require.Equal(t, "git-credentials", s.GetName())
			require.Equal(t, tc.ns, s.GetNamespace(), "in the GitProvider's namespace")
			typ, _, _ := unstructured.NestedString(s.Object, "type")
			require.Equal(t, tc.typ, typ)
			data, _, _ := unstructured.NestedStringMap(s.Object, "stringData")
			require.Equal(t, tc.data, data)
		})
	}
	t.Run("existingSecret creates nothing", func(t *testing.T) {
		require.Empty(t, byKind(render(t, "gr", "gitops-reverser", all["existingSecret"]), "Secret"))
	})
	t.Run("mirrorAllTypes", func(t *testing.T) {
		rules, _, _ := unstructured.NestedSlice(oneOfKind(t, render(t, "gr", "gitops-reverser", all["mirrorAllTypes"]), "ClusterRole").Object, "rules")
		last := rules[len(rules)-1].(map[string]any)
		require.Equal(t, []any{"*"}, last["apiGroups"])
		require.Equal(t, []any{"get", "list", "watch"}, last["verbs"])
	})
	t.Run("generateSigningKeys", func(t *testing.T) {
		require.False(t, grantsSecretWrites(t, render(t, "gr", "gitops-reverser", "")), "no Secret writes by default")
		require.True(t, grantsSecretWrites(t, render(t, "gr", "gitops-reverser", all["generateSigningKeys"])))
		require.True(t, grantsSecretWrites(t, render(t, "gr", "gitops-reverser", all["generateEncryptionKeys"])))
	})
	t.Run("no leader election recreates", func(t *testing.T) {
		d := oneOfKind(t, render(t, "gr", "gitops-reverser", all["noLeaderElection"]), "Deployment")
		typ, _, _ := unstructured.NestedString(d.Object, "spec", "strategy", "type")
		require.Equal(t, "Recreate", typ)
	})
	t.Run("serviceMonitor", func(t *testing.T) {
		oneOfKind(t, render(t, "gr", "gitops-reverser", all["serviceMonitor"]), "ServiceMonitor")
	})
}

// TestTemplateSecretAccess checks where the chart grants Secret access: by
// default only in the release namespace, per namespace for
// rbac.credentialNamespaces (the Deployment's --credential-namespaces
// naming the same), cluster-wide only with rbac.clusterWideSecrets, and a
// mirrored type with namespaces only there.
func TestTemplateSecretAccess(t *testing.T) {
	all := map[string]string{}
	for _, v := range variants() {
		all[v.name] = v.values
	}
	const ns = "gitops-reverser"
	cases := []struct {
		variant           string
		reads, writes     []string
		credentialNSFlag  []string
		mirroredSecretsIn []string
	}{
		{"defaults", []string{ns}, nil, []string{ns}, nil},
		{"token", []string{ns, "team-a"}, nil, []string{ns, "team-a"}, nil}, // credentials.namespace
		{"credentialNamespaces", []string{ns, "team-a", "team-b"}, []string{ns, "team-a", "team-b"}, []string{ns, "team-a", "team-b"}, nil},
		{"clusterWideSecrets", []string{""}, []string{""}, nil, nil},
		{"namespacedMirror", []string{ns}, nil, []string{ns}, []string{"team-a", "team-b"}},
		{"mirrorAllTypes", []string{ns}, nil, []string{ns}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.variant, func(t *testing.T) {
			objs := render(t, "gr", ns, all[tc.variant])
			require.Equal(t, tc.reads, secretRules(objs, "[get list watch]"), "where Secrets are read")
			require.Equal(t, tc.writes, secretRules(objs, "[create update]"), "where Secrets are written")
			require.Equal(t, tc.credentialNSFlag, credentialNamespacesFlag(t, objs))
			require.Equal(t, tc.mirroredSecretsIn, secretRules(objs, "[list watch]"), "where Secrets are mirrored")
		})
	}
}

func TestSchemaRefusesBadValues(t *testing.T) {
	cases := []struct {
		name, values string
		want         []string
	}{
		{"two replicas without Redis", "replicaCount: 2\n", []string{"at '/redis/addr': minLength: got 0, want 1"}},
		{"unknown credentials type", "credentials: {type: gitea}\n",
			[]string{"at '/credentials/type': value must be one of 'none', 'existingSecret', 'githubApp', 'token', 'ssh'"}},
		{"existingSecret without a name", "credentials: {type: existingSecret}\n",
			[]string{"at '/credentials/existingSecret': minLength: got 0, want 1"}},
		{"githubApp without fields", "credentials: {type: githubApp}\n", []string{
			"at '/credentials/githubApp/appID': '' does not match pattern",
			"at '/credentials/githubApp/installationID': '' does not match pattern",
			"at '/credentials/githubApp/privateKey': '' does not match pattern"}},
		{"githubApp with a non-numeric id", fmt.Sprintf("credentials: {type: githubApp, githubApp: {appID: abc, installationID: 1, privateKey: %q}}\n", fakeRSAKey),
			[]string{"at '/credentials/githubApp/appID': 'abc' does not match pattern"}},
		{"token without token", "credentials: {type: token}\n", []string{"at '/credentials/token/token': minLength: got 0, want 1"}},
		{"ssh without known_hosts", fmt.Sprintf("credentials: {type: ssh, ssh: {privateKey: %q}}\n", fakePrivateKey),
			[]string{"at '/credentials/ssh/knownHosts': minLength: got 0, want 1"}},
		{"misspelled credentials field", "credentials: {type: token, token: {tokne: x}}\n", []string{"additional properties 'tokne' not allowed"}},
		{"mirrorAllTypes not a boolean", "rbac: {mirrorAllTypes: \"yes\"}\n", []string{"at '/rbac/mirrorAllTypes': got string, want boolean"}},
		{"mirrored resource without resources", "rbac: {mirroredResources: [{apiGroups: [apps]}]}\n", []string{"missing property 'resources'"}},
		{"a name among the IP addresses", "attribution: {extraIPAddresses: [audit.example]}\n",
			[]string{"at '/attribution/extraIPAddresses/0': 'audit.example' does not match pattern"}},
		{"a serving duration in days", "attribution: {certManager: {servingDuration: 90d}}\n",
			[]string{"at '/attribution/certManager/servingDuration': '90d' does not match pattern"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"template", "gr", chartDir()}, valuesFile(t, tc.values)...)
			out, err := helm(t, args...)
			require.Error(t, err, "helm template accepted %q:\n%s", tc.values, out)
			require.Contains(t, out, "values don't meet the specifications of the schema")
			for _, w := range tc.want {
				require.Contains(t, out, w)
			}
		})
	}
}

// ctx is a bounded context for API calls in a test.
func ctx(t *testing.T) context.Context {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

// grantsSecretWrites reports whether the ClusterRole or a Role lets the
// operator create and update Secrets, which generating a signing or age
// key needs.
func grantsSecretWrites(t *testing.T, objs []*unstructured.Unstructured) bool {
	t.Helper()
	return len(secretRules(objs, "[create update]")) > 0
}

// secretRules are the namespaces ("" for the ClusterRole) whose rules grant
// verbs (as fmt prints them, "[get list watch]") on core Secrets.
func secretRules(objs []*unstructured.Unstructured, verbs string) []string {
	var where []string
	for _, o := range objs {
		if o.GetKind() != "ClusterRole" && o.GetKind() != "Role" {
			continue
		}
		rules, _, _ := unstructured.NestedSlice(o.Object, "rules")
		for _, r := range rules {
			rule := r.(map[string]any)
			if fmt.Sprint(rule["apiGroups"]) == "[]" && fmt.Sprint(rule["resources"]) == "[secrets]" &&
				fmt.Sprint(rule["verbs"]) == verbs {
				where = append(where, o.GetNamespace())
			}
		}
	}
	return where
}

// Several replicas with Redis: each is told how many run (they share the
// branches), and the leader-election Role also lets them keep and watch
// one membership Lease each and delete a dead member's.
func TestSeveralReplicasShareTheBranches(t *testing.T) {
	leaseVerbs := func(objs []*unstructured.Unstructured) []any {
		for _, role := range byKind(objs, "Role") {
			rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
			for _, r := range rules {
				if slices.Contains(r.(map[string]any)["resources"].([]any), any("leases")) {
					return r.(map[string]any)["verbs"].([]any)
				}
			}
		}
		return nil
	}
	one := render(t, "gr", "gitops-reverser", "")
	require.Equal(t, []any{"get", "create", "update"}, leaseVerbs(one))
	require.NotContains(t, containerArgs(t, one), "--replica-count=1")

	three := render(t, "gr", "gitops-reverser", "replicaCount: 3\nredis: {addr: \"redis:6379\"}\n")
	require.Equal(t, []any{"get", "list", "watch", "create", "update", "delete"}, leaseVerbs(three))
	require.Contains(t, containerArgs(t, three), "--replica-count=3")
	require.EqualValues(t, 3, oneOfKind(t, three, "Deployment").Object["spec"].(map[string]any)["replicas"])
	key, err := base64.StdEncoding.DecodeString(named(t, three, "Secret", "gitops-reverser-journal-key").Object["data"].(map[string]any)["key"].(string))
	require.NoError(t, err)
	require.Len(t, key, 32, "the journal's sealing key is AES-256")
	require.False(t, slices.ContainsFunc(byKind(one, "Secret"), func(o *unstructured.Unstructured) bool {
		return o.GetName() == "gitops-reverser-journal-key"
	}), "one replica journals nothing")
}
