package v1alpha3_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

const testNamespace = "validation"

// invalidObjects are objects the API server must refuse, each with the field
// the refusal has to name so a user knows what to fix.
var invalidObjects = []struct {
	name  string
	field string
	yaml  string
}{
	{"WatchRule without rules", "spec.rules", `
kind: WatchRule
spec: {targetRef: {name: t}, rules: []}`},
	{"WatchRule naming a subresource", "spec.rules[0].resources[0]", `
kind: WatchRule
spec: {targetRef: {name: t}, rules: [{resources: [deployments/scale]}]}`},
	{"WatchRule with an unknown operation", "spec.rules[0].operations[0]", `
kind: WatchRule
spec: {targetRef: {name: t}, rules: [{operations: [PATCH], resources: [configmaps]}]}`},
	{"WatchRule without targetRef", "spec.targetRef", `
kind: WatchRule
spec: {rules: [{resources: [configmaps]}]}`},
	{"WatchRule with an invalid sourceNamespace", "spec.rules[0].sourceNamespace", `
kind: WatchRule
spec: {targetRef: {name: t}, rules: [{resources: [configmaps], sourceNamespace: Bad_NS}]}`},
	{"ClusterWatchRule with scope Namespaced", "spec.rules[0].scope", `
kind: ClusterWatchRule
spec: {targetRef: {name: t, namespace: validation}, rules: [{resources: [namespaces], scope: Namespaced}]}`},
	{"ClusterWatchRule targetRef without namespace", "spec.targetRef.namespace", `
kind: ClusterWatchRule
spec: {targetRef: {name: t}, rules: [{resources: [namespaces]}]}`},
	{"CommitRequest message with a control character", "spec.message", `
kind: CommitRequest
spec: {targetRef: {name: t}, message: "first line\nsecond line"}`},
	{"CommitRequest message over 1024 characters", "spec.message", `
kind: CommitRequest
spec: {targetRef: {name: t}, message: "` + strings.Repeat("x", 1025) + `"}`},
	{"CommitRequest closeDelaySeconds over 300", "spec.closeDelaySeconds", `
kind: CommitRequest
spec: {targetRef: {name: t}, closeDelaySeconds: 301}`},
	{"CommitRequest negative closeDelaySeconds", "spec.closeDelaySeconds", `
kind: CommitRequest
spec: {targetRef: {name: t}, closeDelaySeconds: -1}`},
	{"GitTarget without path", "spec.path", `
kind: GitTarget
spec: {providerRef: {name: p}, branch: main}`},
	{"GitTarget path escaping the repository", "spec.path", `
kind: GitTarget
spec: {providerRef: {name: p}, branch: main, path: ../escape}`},
	{"GitTarget path into .git", "spec.path", `
kind: GitTarget
spec: {providerRef: {name: p}, branch: main, path: clusters/.git/hooks}`},
	{"GitTarget branch with '..'", "spec.branch", `
kind: GitTarget
spec: {providerRef: {name: p}, branch: feature..x, path: clusters}`},
	{"GitTarget providerRef of another kind", "spec.providerRef.kind", `
kind: GitTarget
spec: {providerRef: {name: p, kind: Secret}, branch: main, path: clusters}`},
	{"GitTarget with a malformed age recipient", "spec.encryption.age.recipients[0]", `
kind: GitTarget
spec: {providerRef: {name: p}, branch: main, path: clusters, encryption: {age: {recipients: [age1notakey]}}}`},
	{"GitTarget generating a key with nowhere to store it", "spec.encryption.age.generateWhenMissing", `
kind: GitTarget
spec:
  providerRef: {name: p}
  branch: main
  path: clusters
  encryption: {age: {recipients: [age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p], generateWhenMissing: true}}`},
	{"GitTarget placement with an unknown variable", "spec.placement.default", `
kind: GitTarget
spec: {providerRef: {name: p}, branch: main, path: clusters, placement: {default: "{namespace}/{cluster}.yaml"}}`},
	{"GitTarget placement with an unclosed brace", "spec.placement.byType[v1/configmaps]", `
kind: GitTarget
spec: {providerRef: {name: p}, branch: main, path: clusters, placement: {byType: {v1/configmaps: "{namespace/x.yaml"}}}`},
	{"GitTarget placement that is not a YAML file", "spec.placement.default", `
kind: GitTarget
spec: {providerRef: {name: p}, branch: main, path: clusters, placement: {default: "{namespace}/{name}.json"}}`},
	{"GitTarget placement escaping the path", "spec.placement.default", `
kind: GitTarget
spec: {providerRef: {name: p}, branch: main, path: clusters, placement: {default: "../{name}.yaml"}}`},
	{"GitTarget placement keyed by a kind", "spec.placement.byType", `
kind: GitTarget
spec: {providerRef: {name: p}, branch: main, path: clusters, placement: {byType: {ConfigMap: "{name}.yaml"}}}`},
	{"GitProvider with a URL that is not one", "spec.url", `
kind: GitProvider
spec: {url: not a url, allowedBranches: [main]}`},
	{"GitProvider without allowedBranches", "spec.allowedBranches", `
kind: GitProvider
spec: {url: "https://git.example.com/org/repo.git"}`},
	{"GitProvider commitWindow not a duration", "spec.push.commitWindow", `
kind: GitProvider
spec: {url: "https://git.example.com/org/repo.git", allowedBranches: [main], push: {commitWindow: 5 minutes}}`},
	{"GitProvider commitWindow over an hour", "spec.push.commitWindow", `
kind: GitProvider
spec: {url: "https://git.example.com/org/repo.git", allowedBranches: [main], push: {commitWindow: 2h}}`},
	{"GitProvider with an unknown forge", "spec.forge.type", `
kind: GitProvider
spec: {url: "https://git.example.com/org/repo.git", allowedBranches: [main], forge: {type: bitbucket}}`},
	{"GitProvider verified mode off GitHub", "spec.commit.mode", `
kind: GitProvider
spec: {url: "https://git.example.com/org/repo.git", allowedBranches: [main], commit: {mode: Verified}}`},
	{"GitProvider committer email without @", "spec.commit.committer.email", `
kind: GitProvider
spec: {url: "https://git.example.com/org/repo.git", allowedBranches: [main], commit: {committer: {email: nobody}}}`},
	{"ClusterProvider qps of zero", "spec.qps", `
kind: ClusterProvider
spec: {qps: 0}`},
	{"ClusterProvider auditRoute not a DNS label", "spec.attribution.auditRoute", `
kind: ClusterProvider
spec: {attribution: {auditRoute: Bad Route}}`},
	{"ClusterProvider kubeConfig without a Secret name", "spec.kubeConfig.secretRef.name", `
kind: ClusterProvider
spec: {kubeConfig: {secretRef: {key: value}}}`},
}

func TestInvalidObjectsAreRefusedNamingTheField(t *testing.T) {
	ctx := context.Background()
	ensureNamespace(t, testNamespace)
	kinds := map[string]bool{}
	for i, tc := range invalidObjects {
		kinds[parseObject(t, tc.yaml, "").GetKind()] = true
		t.Run(tc.name, func(t *testing.T) {
			obj := parseObject(t, tc.yaml, "invalid-"+strconv.Itoa(i))
			err := kube.Client().Create(ctx, obj)
			require.Error(t, err, "the API server accepted an invalid %s", obj.GetKind())
			t.Log(err)
			require.True(t, apierrors.IsInvalid(err), "want 422 Invalid, got %v", err)
			require.Contains(t, err.Error(), tc.field, "the refusal must name %s", tc.field)
			require.Contains(t, causeFields(err), tc.field)
		})
	}
	require.Len(t, kinds, 6, "the table must cover all six kinds")
}

func TestImmutableFieldsCannotChange(t *testing.T) {
	ctx := context.Background()
	ensureNamespace(t, testNamespace)
	cases := []struct {
		name, field, yaml string
		mutate            func(u *unstructured.Unstructured)
	}{
		{"GitTarget branch", "spec.branch", validGitTarget, setField("other", "spec", "branch")},
		{"GitTarget path", "spec.path", validGitTarget, setField("elsewhere", "spec", "path")},
		{"GitTarget providerRef", "spec.providerRef", validGitTarget, setField("other", "spec", "providerRef", "name")},
		{"GitTarget clusterProviderRef", "spec.clusterProviderRef", validGitTarget, setField("other", "spec", "clusterProviderRef", "name")},
		{"GitProvider url", "spec.url", validGitProvider, setField("https://git.example.com/org/other.git", "spec", "url")},
		{"CommitRequest spec", "spec", validCommitRequest, setField("changed", "spec", "message")},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := parseObject(t, tc.yaml, "immutable-"+strconv.Itoa(i))
			require.NoError(t, kube.Client().Create(ctx, obj))
			tc.mutate(obj)
			err := kube.Client().Update(ctx, obj)
			require.Error(t, err, "changing %s was accepted", tc.field)
			require.True(t, apierrors.IsInvalid(err), "want 422 Invalid, got %v", err)
			require.Contains(t, err.Error(), tc.field+": Invalid value")
			require.Contains(t, err.Error(), "immutable")
		})
	}
}

func ensureNamespace(t *testing.T, name string) {
	t.Helper()
	err := kube.Client().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
}

// parseObject reads a manifest that leaves out apiVersion and metadata, and
// gives it a name (and the test namespace for namespaced kinds).
func parseObject(t *testing.T, manifest, name string) *unstructured.Unstructured {
	t.Helper()
	var content map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(manifest), &content))
	obj := &unstructured.Unstructured{Object: content}
	obj.SetAPIVersion("configbutler.ai/v1alpha3")
	obj.SetName(name)
	if kind := obj.GetKind(); kind != "ClusterWatchRule" && kind != "ClusterProvider" {
		obj.SetNamespace(testNamespace)
	}
	return obj
}

func setField(value string, path ...string) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, value, path...)
	}
}

func causeFields(err error) []string {
	status, ok := err.(apierrors.APIStatus)
	if !ok || status.Status().Details == nil {
		return nil
	}
	var fields []string
	for _, c := range status.Status().Details.Causes {
		fields = append(fields, c.Field)
	}
	return fields
}
