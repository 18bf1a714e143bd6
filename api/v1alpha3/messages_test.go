package v1alpha3_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// refusalsInWords are objects the API server refuses with a message a user
// can act on: the field, and what it must be, in words, never a regular
// expression.
var refusalsInWords = []struct {
	name, field, says, yaml string
}{
	{"GitTarget path with '..'", "spec.path", "no path segment may start with '.'", `
kind: GitTarget
spec: {providerRef: {name: p}, branch: main, path: clusters/../escape}`},
	{"GitTarget path with a leading '/'", "spec.path", "relative to the repository root", `
kind: GitTarget
spec: {providerRef: {name: p}, branch: main, path: /clusters}`},
	{"GitTarget without path", "spec.path", "path is required", `
kind: GitTarget
spec: {providerRef: {name: p}, branch: main}`},
	{"GitTarget without branch", "spec.branch", "branch is required", `
kind: GitTarget
spec: {providerRef: {name: p}, path: clusters}`},
	{"GitTarget path with a segment over 255 characters", "spec.path", "no path segment may be longer than 255 characters", `
kind: GitTarget
spec: {providerRef: {name: p}, branch: main, path: clusters/` + strings.Repeat("a", 256) + `}`},
	{"GitTarget path with a space", "spec.path", "path may use only letters, digits", `
kind: GitTarget
spec: {providerRef: {name: p}, branch: main, path: my clusters}`},
	{"GitTarget without providerRef", "spec.providerRef", "providerRef is required", `
kind: GitTarget
spec: {branch: main, path: clusters}`},
	{"GitTarget with a null providerRef", "spec.providerRef", "providerRef is required", `
kind: GitTarget
spec: {providerRef: null, branch: main, path: clusters}`},
	{"GitTarget providerRef without a name", "spec.providerRef.name", "name is required", `
kind: GitTarget
spec: {providerRef: {}, branch: main, path: clusters}`},
	{"GitTarget providerRef name in upper case", "spec.providerRef.name", "must be a Kubernetes object name", `
kind: GitTarget
spec: {providerRef: {name: My_Provider}, branch: main, path: clusters}`},
	{"GitTarget branch with a space", "spec.branch", "branch may use only letters, digits", `
kind: GitTarget
spec: {providerRef: {name: p}, branch: my branch, path: clusters}`},
	{"GitTarget malformed age recipient", "spec.encryption.age.recipients[0]", "must be an age public key", `
kind: GitTarget
spec: {providerRef: {name: p}, branch: main, path: clusters, encryption: {age: {recipients: [age1notakey]}}}`},
	{"GitTarget placement outside the path", "spec.placement.default", "segments do not start with '.'", `
kind: GitTarget
spec: {providerRef: {name: p}, branch: main, path: clusters, placement: {default: "../{name}.yaml"}}`},
	{"GitProvider URL that is not one", "spec.url", "must be a repository URL", `
kind: GitProvider
spec: {url: not a url, allowedBranches: [main]}`},
	{"GitProvider URL with a token in it", "spec.url", "put the credentials in the Secret named by spec.secretRef", `
kind: GitProvider
spec: {url: "https://bot:ghp_0123456789abcdef@github.com/org/repo.git", allowedBranches: [main]}`},
	{"GitProvider SSH URL with a password in it", "spec.url", "must not carry a password or token", `
kind: GitProvider
spec: {url: "ssh://git:hunter2@git.example.com/org/repo.git", allowedBranches: [main]}`},
	{"GitProvider committer email without @", "spec.commit.committer.email", "must be an email address", `
kind: GitProvider
spec: {url: "https://git.example.com/org/repo.git", allowedBranches: [main], commit: {committer: {email: nobody}}}`},
	{"WatchRule with a resource in upper case", "spec.rules[0].resources[0]", "plural lower-case resource name", `
kind: WatchRule
spec: {targetRef: {name: t}, rules: [{resources: [ConfigMaps]}]}`},
	{"WatchRule with a sourceNamespace in upper case", "spec.rules[0].sourceNamespace", "namespace name", `
kind: WatchRule
spec: {targetRef: {name: t}, rules: [{resources: [configmaps], sourceNamespace: Bad_NS}]}`},
	{"WatchRule without targetRef", "spec.targetRef", "targetRef is required", `
kind: WatchRule
spec: {rules: [{resources: [configmaps]}]}`},
	{"WatchRule rule without resources", "spec.rules[0].resources", "resources is required", `
kind: WatchRule
spec: {targetRef: {name: t}, rules: [{operations: [CREATE]}]}`},
	{"ClusterWatchRule targetRef without namespace", "spec.targetRef.namespace", "namespace is required", `
kind: ClusterWatchRule
spec: {targetRef: {name: t}, rules: [{resources: [namespaces]}]}`},
	{"GitProvider without url", "spec.url", "url is required", `
kind: GitProvider
spec: {allowedBranches: [main]}`},
	{"GitProvider without allowedBranches", "spec.allowedBranches", "allowedBranches is required", `
kind: GitProvider
spec: {url: "https://git.example.com/org/repo.git"}`},
	{"CommitRequest without targetRef", "spec.targetRef", "targetRef is required", `
kind: CommitRequest
spec: {message: hello}`},
	{"ClusterProvider kubeConfig without a Secret name", "spec.kubeConfig.secretRef.name", "name is required", `
kind: ClusterProvider
spec: {kubeConfig: {secretRef: {key: value}}}`},
	{"ClusterWatchRule targetRef namespace in upper case", "spec.targetRef.namespace", "must be a DNS label", `
kind: ClusterWatchRule
spec: {targetRef: {name: t, namespace: Team}, rules: [{resources: [namespaces]}]}`},
}

func TestRefusalsSayInWordsWhatTheFieldMustBe(t *testing.T) {
	ctx := context.Background()
	ensureNamespace(t, testNamespace)
	for i, tc := range refusalsInWords {
		t.Run(tc.name, func(t *testing.T) {
			obj := parseObject(t, tc.yaml, "words-"+strconv.Itoa(i))
			err := kube.Client().Create(ctx, obj)
			require.Error(t, err, "the API server accepted an invalid %s", obj.GetKind())
			t.Log(err)
			require.True(t, apierrors.IsInvalid(err), "want 422 Invalid, got %v", err)
			require.Contains(t, err.Error(), tc.field+":", "the refusal names the field")
			require.Contains(t, err.Error(), tc.says)
			require.NotContains(t, err.Error(), "should match", "a regular expression is no message")
			require.NotContains(t, err.Error(), "null", "a missing value is named as missing")
		})
	}
}
