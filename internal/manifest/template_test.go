package manifest_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/manifest"
)

func TestRenderPathVariables(t *testing.T) {
	namespaceID := manifest.ObjectID{Version: "v1", Kind: "Namespace", Resource: "namespaces", Name: "team-a"}
	clusterRole := manifest.ObjectID{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole",
		Resource: "clusterroles", Name: "system:reader"}
	tests := []struct {
		name      string
		root      string
		template  string
		id        manifest.ObjectID
		sensitive bool
		want      string
	}{
		{"every variable", "clusters/prod", "{namespace}/{group}/{version}/{resource}/{kind}-{name}.yaml",
			deploymentID("team-a", "api"), false, "clusters/prod/team-a/apps/v1/deployments/Deployment-api.yaml"},
		{"core group drops its segment", "clusters/prod", "{namespace}/{group}/{resource}/{name}.yaml",
			configMapID("team-a", "app"), false, "clusters/prod/team-a/configmaps/app.yaml"},
		{"core group inside a segment renders empty", ".", "{namespace}/x{group}-{name}.yml",
			configMapID("team-a", "app"), false, "team-a/x-app.yml"},
		{"cluster-scoped namespace is _cluster", ".", "{namespace}/{resource}/{name}.yaml",
			namespaceID, false, "_cluster/namespaces/team-a.yaml"},
		{"grouped cluster-scoped", "root", "{group}/{namespace}/{name}.yaml",
			clusterRole, false, "root/rbac.authorization.k8s.io/_cluster/system:reader.yaml"},
		{"literal only", "r", "everything.yaml", configMapID("a", "b"), false, "r/everything.yaml"},
		{"bundle per namespace", "r", "{namespace}/all.yaml", configMapID("a", "b"), false, "r/a/all.yaml"},
		{"sensitive gets .sops.yaml", ".", "{namespace}/{name}.yaml", secretID("a", "db"), true, "a/db.sops.yaml"},
		{"sensitive .yml becomes .sops.yaml", ".", "{namespace}/{name}.yml", secretID("a", "db"), true, "a/db.sops.yaml"},
		{"sensitive .sops.yaml is kept", ".", "{namespace}/{name}.sops.yaml", secretID("a", "db"), true, "a/db.sops.yaml"},
		{"sensitive .sops.yml is normalized", ".", "{name}.sops.yml", secretID("a", "db"), true, "db.sops.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := manifest.RenderPath(tt.root, tt.template, tt.id, tt.sensitive)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestRenderPathRefusesUnsafeRenders(t *testing.T) {
	tests := []struct {
		name      string
		template  string
		id        manifest.ObjectID
		sensitive bool
		wantErr   string
	}{
		{"unknown variable", "{namespace}/{cluster}.yaml", configMapID("a", "b"), false, "unknown variable {cluster}"},
		{"unclosed brace", "{namespace/{name}.yaml", configMapID("a", "b"), false, "'{' without '}'"},
		{"unopened brace", "namespace}/{name}.yaml", configMapID("a", "b"), false, "'}' without '{'"},
		{"dot-dot segment", "../{name}.yaml", configMapID("a", "b"), false, "starts with a dot"},
		{"dot segment", "./{name}.yaml", configMapID("a", "b"), false, "starts with a dot"},
		{"git directory", ".git/{name}.yaml", configMapID("a", "b"), false, "starts with a dot"},
		{"hidden file from a value", "{name}.yaml", configMapID("a", ".hidden"), false, "starts with a dot"},
		{"dot-dot from a value", "{name}/x.yaml", configMapID("a", ".."), false, "starts with a dot"},
		{"separator in a value", "{name}.yaml", configMapID("a", "x/y"), false, "path separator"},
		{"backslash in a value", "{name}.yaml", configMapID("a", `x\y`), false, "path separator"},
		{"not a yaml file", "{namespace}/{name}.json", configMapID("a", "b"), false, "does not end in .yaml or .yml"},
		{"empty core group is the whole file name", "{group}.yaml", configMapID("a", "b"), false, "starts with a dot"},
		{"renders nothing", "{group}", configMapID("a", "b"), false, "renders no path"},
		{"plaintext into a sops file", "{name}.sops.yaml", configMapID("a", "b"), false, "never placed in a .sops file"},
		{"sensitive with an empty stem", "x/.sops.yaml", secretID("a", "b"), true, "starts with a dot"},
		{"missing name", "{name}.yaml", configMapID("a", ""), false, "{name} is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := manifest.RenderPath("root", tt.template, tt.id, tt.sensitive)
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

func TestTypeKey(t *testing.T) {
	require.Equal(t, "v1/configmaps", manifest.TypeKey(configMapID("a", "b")))
	require.Equal(t, "apps/v1/deployments", manifest.TypeKey(deploymentID("a", "b")))
}
