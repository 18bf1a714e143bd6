package docs

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/credentials"
	"github.com/configbutler/gitops-reverser/internal/forgeconn"
	"github.com/configbutler/gitops-reverser/test/harness"
)

// TestQuickstartsMatchTheChartAndTheAPI follows every page of
// docs/quickstart/ as a user would, short of a real forge: its objects are
// accepted by a real API server with the operator's CRDs (server-side dry
// run), its helm commands render with the chart and pass its values schema,
// its rollout command names the Deployment the chart creates, and the
// credentials Secret each page creates (by the chart or by kubectl) opens
// the page's GitProvider: the operator reads the keys and builds the forge
// client from them.
func TestQuickstartsMatchTheChartAndTheAPI(t *testing.T) {
	pages, err := filepath.Glob(filepath.Join(harness.RepoRoot(), "docs", "quickstart", "*.md"))
	require.NoError(t, err)
	require.NotEmpty(t, pages)

	for _, path := range pages {
		p := readPage(t, path)
		if len(p.objects(t)) == 0 {
			continue // an index page
		}
		t.Run(filepath.Base(path), func(t *testing.T) {
			provider := acceptObjects(t, kube.Client(), p.objects(t))
			files := userFiles(t, provider)
			var deployments, rollouts []string
			for _, args := range p.commands(t) {
				switch {
				case len(args) > 2 && args[0] == "helm" && (args[1] == "install" || args[1] == "upgrade"):
					rendered := renderHelm(t, p, args, files)
					deployments = append(deployments, namesOf(rendered, "Deployment")...)
					// An upgrade with --reuse-values keeps the install's grants,
					// which rendering it alone cannot show.
					reused := slices.Contains(args, "--reuse-values")
					require.True(t, reused || readsSecretsIn(rendered, provider.Namespace),
						"the chart lets the operator read Secrets in the GitProvider's namespace %s (rbac.credentialNamespaces): %v",
						provider.Namespace, args)
					if secret := chartSecret(t, rendered); secret != nil {
						require.Equal(t, provider.Spec.SecretRef.Name, secret.Name, "the GitProvider names the chart's Secret")
						openProvider(t, provider, secret)
					}
				case slices.Contains(args, "rollout"):
					rollouts = append(rollouts, namespaced(args, strings.TrimPrefix(args[len(args)-1], "deployment/")))
				case len(args) > 4 && args[0] == "kubectl" && slices.Contains(args, "secret"):
					openProvider(t, provider, kubectlSecret(t, args, files))
				}
			}
			for _, d := range rollouts {
				require.Contains(t, deployments, d, "the rollout command names a Deployment the chart renders")
			}
		})
	}
}

// readsSecretsIn reports whether the rendered chart grants get on Secrets
// in namespace: a Role there, or the ClusterRole.
func readsSecretsIn(objs []*unstructured.Unstructured, namespace string) bool {
	for _, o := range objs {
		if (o.GetKind() != "Role" || o.GetNamespace() != namespace) && o.GetKind() != "ClusterRole" {
			continue
		}
		rules, _, _ := unstructured.NestedSlice(o.Object, "rules")
		for _, r := range rules {
			rule, _ := r.(map[string]any)
			resources, _, _ := unstructured.NestedStringSlice(rule, "resources")
			verbs, _, _ := unstructured.NestedStringSlice(rule, "verbs")
			if slices.Contains(resources, "secrets") && slices.Contains(verbs, "get") {
				return true
			}
		}
	}
	return false
}

// acceptObjects creates the page's objects as a server-side dry run (their
// namespaces for real) and returns its GitProvider as stored, defaults
// applied.
func acceptObjects(t *testing.T, c client.Client, objs []*unstructured.Unstructured) v1alpha3.GitProvider {
	t.Helper()
	var providers []v1alpha3.GitProvider
	for _, obj := range objs {
		require.NoError(t, dryRunCreate(t, c, obj), "%s %s", obj.GetKind(), obj.GetName())
		if obj.GetKind() == "GitProvider" {
			var gp v1alpha3.GitProvider
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &gp))
			providers = append(providers, gp)
		}
	}
	require.Len(t, providers, 1, "a quickstart configures one GitProvider")
	return providers[0]
}

// dryRunCreate creates obj as a server-side dry run with strict field
// validation, as `kubectl create --dry-run=server --validate=strict` does;
// its namespace is created for real.
func dryRunCreate(t *testing.T, c client.Client, obj *unstructured.Unstructured) error {
	t.Helper()
	if ns := obj.GetNamespace(); ns != "" {
		err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		if !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err)
		}
	}
	return c.Create(context.Background(), obj, client.DryRunAll, client.FieldValidation("Strict"))
}

// renderHelm runs the page's helm install or upgrade as helm template, with
// the files it names replaced by the user's (test) files.
func renderHelm(t *testing.T, p page, args []string, files map[string]string) []*unstructured.Unstructured {
	t.Helper()
	helm, err := harness.HelmBinary()
	require.NoError(t, err)
	template := []string{"template", args[2], args[3]}
	for i := 4; i < len(args); i++ {
		a := args[i]
		switch a {
		case "--namespace", "--set":
			template = append(template, a, args[i+1])
			i++
		case "--set-file":
			key, file, _ := strings.Cut(args[i+1], "=")
			require.Contains(t, files, file, "%s passes a file the quickstart does not create", args[i+1])
			template = append(template, a, key+"="+writeFile(t, file, files[file]))
			i++
		case "-f":
			values, ok := p.namedYAML(args[i+1])
			require.True(t, ok, "no yaml block starting with # %s", args[i+1])
			template = append(template, a, writeFile(t, args[i+1], values))
			i++
		case "--create-namespace", "--reuse-values":
		default:
			require.Failf(t, "unknown helm flag", "%s in %v", a, args)
		}
	}
	cmd := exec.Command(helm, template...)
	cmd.Dir = harness.RepoRoot()
	out, err := cmd.Output()
	var stderr string
	if exitErr, ok := err.(*exec.ExitError); ok {
		stderr = string(exitErr.Stderr)
	}
	require.NoError(t, err, "helm %v:\n%s", template, stderr)
	return decodeObjects(t, string(out))
}

// chartSecret is the credentials Secret a release creates, nil without one.
func chartSecret(t *testing.T, objs []*unstructured.Unstructured) *corev1.Secret {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() != "Secret" {
			continue
		}
		var s corev1.Secret
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &s))
		s.Data = map[string][]byte{}
		for k, v := range s.StringData { // what the API server does on write
			s.Data[k] = []byte(v)
		}
		return &s
	}
	return nil
}

// kubectlSecret builds the Secret `kubectl create secret generic` makes.
func kubectlSecret(t *testing.T, args []string, files map[string]string) *corev1.Secret {
	t.Helper()
	generic := slices.Index(args, "generic")
	require.Positive(t, generic, "only generic Secrets: %v", args)
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: args[generic+1], Namespace: namespaceOf(args)}, Data: map[string][]byte{}}
	for _, literal := range flagValues(args, "--from-literal") {
		key, value, _ := strings.Cut(literal, "=")
		s.Data[key] = []byte(value)
	}
	for _, source := range flagValues(args, "--from-file") {
		key, file, _ := strings.Cut(source, "=")
		file = strings.TrimPrefix(file, "./")
		require.Contains(t, files, file, "%s reads a file the quickstart does not create", source)
		s.Data[key] = []byte(files[file])
	}
	return s
}

// openProvider does what the operator does with the GitProvider and the
// Secret: read the credentials, then build the forge client.
func openProvider(t *testing.T, provider v1alpha3.GitProvider, secret *corev1.Secret) {
	t.Helper()
	require.Equal(t, provider.Namespace, secret.Namespace, "the Secret is in the GitProvider's namespace")
	spec := *provider.Spec.DeepCopy()
	spec.SecretRef = &v1alpha3.LocalObjectReference{Name: secret.Name}
	reader := fake.NewClientBuilder().WithObjects(secret).Build()
	creds, err := credentials.Read(context.Background(), reader, provider.Namespace, spec)
	require.NoError(t, err, "reading Secret %s with keys %v", secret.Name, keys(secret.Data))
	_, err = forgeconn.Open(spec, creds, nil)
	require.NoError(t, err, "opening the %s forge with Secret %s", forgeconn.ForgeType(spec), secret.Name)
}

// namespaceOf is the namespace a kubectl or helm command acts in.
func namespaceOf(args []string) string {
	if ns := flagValues(args, "-n", "--namespace"); len(ns) > 0 {
		return ns[0]
	}
	return "default"
}

// namespaced is "namespace/name" in the namespace of a command.
func namespaced(args []string, name string) string { return namespaceOf(args) + "/" + name }

func namesOf(objs []*unstructured.Unstructured, kind string) []string {
	var out []string
	for _, o := range objs {
		if o.GetKind() == kind {
			out = append(out, o.GetNamespace()+"/"+o.GetName())
		}
	}
	return out
}

func keys(data map[string][]byte) []string {
	var out []string
	for k := range data {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), filepath.Base(name))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

// TestGitHubAppManifestIsWhatTheOperatorNeeds parses the App manifest the
// GitHub guide has the user post: valid JSON, GitHub's required homepage
// url, no webhook, private, and exactly the permissions the github forge
// uses.
func TestGitHubAppManifestIsWhatTheOperatorNeeds(t *testing.T) {
	p := readPage(t, filepath.Join(harness.RepoRoot(), "docs", "quickstart", "github-app.md"))
	var forms []string
	for _, b := range p.blocks {
		if b.lang == "html" {
			forms = append(forms, b.text)
		}
	}
	require.Len(t, forms, 1, "one manifest form")
	_, rest, found := strings.Cut(forms[0], `name="manifest" value='`)
	require.True(t, found, "the form posts a field named manifest")
	value, _, found := strings.Cut(rest, "'>")
	require.True(t, found)

	var manifest struct {
		Name        string            `json:"name"`
		URL         string            `json:"url"`
		Hook        map[string]any    `json:"hook_attributes"`
		RedirectURL string            `json:"redirect_url"`
		Public      *bool             `json:"public"`
		Permissions map[string]string `json:"default_permissions"`
		Events      []string          `json:"default_events"`
	}
	decoder := json.NewDecoder(strings.NewReader(value))
	decoder.DisallowUnknownFields()
	require.NoError(t, decoder.Decode(&manifest))
	require.NotEmpty(t, manifest.Name)
	require.NotEmpty(t, manifest.URL, "GitHub requires the homepage url")
	require.Equal(t, false, manifest.Hook["active"], "no webhook")
	require.NotEmpty(t, manifest.Hook["url"], "hook_attributes needs a url even when inactive")
	require.NotEmpty(t, manifest.RedirectURL, "the code comes back on the redirect")
	require.NotNil(t, manifest.Public)
	require.False(t, *manifest.Public)
	require.Equal(t, map[string]string{"contents": "write", "metadata": "read"}, manifest.Permissions)
	require.Empty(t, manifest.Events)
}
