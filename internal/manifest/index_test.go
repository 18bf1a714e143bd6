package manifest_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/manifest"
)

func TestCheckRefusesContentItCannotManage(t *testing.T) {
	valid := configMapYAML("team-a", "app", "v")
	tests := []struct {
		name   string
		files  map[string]string
		want   []string
		reason manifest.ProblemReason
	}{
		{
			name:   "invalid YAML",
			files:  map[string]string{"a/broken.yaml": "data: [unclosed\n", "a/ok.yaml": valid},
			want:   []string{"a/broken.yaml"},
			reason: manifest.ReasonInvalidYAML,
		},
		{
			name:   "a second document after an end marker without ---",
			files:  map[string]string{"a/ended.yaml": valid + "...\n" + configMapYAML("team-a", "b", "v")},
			want:   []string{"a/ended.yaml"},
			reason: manifest.ReasonInvalidYAML,
		},
		{
			name: "YAML that is not a Kubernetes object",
			files: map[string]string{
				"values.yaml":       "replicaCount: 2\n",
				"list.yml":          "- a\n- b\n",
				"no-name.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n",
				"int-name.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: 123\n",
				"mixed/bundle.yaml": valid + "---\nnot: an object\n",
			},
			want:   []string{"int-name.yaml", "list.yml", "mixed/bundle.yaml", "no-name.yaml", "values.yaml"},
			reason: manifest.ReasonNotKubernetesObject,
		},
		{
			name: "one identity in two documents, across files and versions",
			files: map[string]string{
				"x/app.yaml": valid,
				"y/app.yaml": "apiVersion: v1beta1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: team-a\n",
			},
			want:   []string{"x/app.yaml", "y/app.yaml"},
			reason: manifest.ReasonDuplicateIdentity,
		},
		{
			name:   "one identity twice in one file",
			files:  map[string]string{"twice.yaml": valid + "---\n" + valid},
			want:   []string{"twice.yaml"},
			reason: manifest.ReasonDuplicateIdentity,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := newIndex(t, ".", tt.files).Check()

			var unsupported *manifest.UnsupportedContentError
			require.True(t, errors.As(err, &unsupported), "got %v", err)
			require.Equal(t, tt.want, unsupported.Paths(), "every offending path is listed")
			for _, problem := range unsupported.Problems {
				require.Equal(t, tt.reason, problem.Reason, problem.String())
			}
		})
	}
}

func TestCheckNamesTheDuplicateAndWhereItIs(t *testing.T) {
	valid := configMapYAML("team-a", "app", "v")
	err := newIndex(t, ".", map[string]string{"x/app.yaml": valid, "y/app.yaml": valid}).Check()

	require.ErrorContains(t, err, `unsupported content under "." in 2 file(s)`)
	require.ErrorContains(t, err, "x/app.yaml: DuplicateIdentity: core/ConfigMap team-a/app is defined 2 times (x/app.yaml, y/app.yaml)")
}

func TestAuxiliaryAndEmptyFilesAreKeptAndNeverRefused(t *testing.T) {
	ix := newIndex(t, ".", map[string]string{
		"README.md":                       "# hello\n",
		".sops.yaml":                      "creation_rules:\n- age: age1example\n",
		".github/workflows/ci.yml":        "on: push\njobs: {}\n",
		".gitlab-ci.yml":                  "stages: [test]\n",
		"kustomization.yaml":              "resources:\n- team-a\n",
		"overlays/prod/kustomization.yml": "resources: [../../base]\n",
		"overlays/prod/Kustomization":     "resources: []\n",
		"docs/notes.txt":                  "not yaml at all: [",
		"team-a/empty.yaml":               "",
		"team-a/comments.yaml":            "# nothing here yet\n---\n# still nothing\n",
		"team-a/configmaps/app.yaml":      configMapYAML("team-a", "app", "v"),
	})

	require.NoError(t, ix.Check())
	for _, p := range []string{"README.md", ".sops.yaml", "kustomization.yaml", "docs/notes.txt", "team-a/empty.yaml"} {
		require.True(t, ix.Has(p), p)
	}
	where, found := ix.Lookup(configMapID("team-a", "app"))
	require.True(t, found)
	require.Equal(t, "team-a/configmaps/app.yaml", where)
}

func TestAnEncryptedDocumentIsIndexedByItsPlaintextIdentity(t *testing.T) {
	ix := newIndex(t, ".", map[string]string{"team-a/secrets/db.sops.yaml": encryptedSecretYAML("team-a", "db", "abc")})

	require.NoError(t, ix.Check())
	where, found := ix.Lookup(secretID("team-a", "db"))
	require.True(t, found)
	require.Equal(t, "team-a/secrets/db.sops.yaml", where)
}

func TestNewIndexRefusesPathsOutsideItsRoot(t *testing.T) {
	tests := []struct {
		name, root, path string
	}{
		{"outside the root", "team-a", "team-b/x.yaml"},
		{"a sibling with the root as prefix", "team-a", "team-ab/x.yaml"},
		{"not clean", ".", "a/../b.yaml"},
		{"absolute", ".", "/etc/x.yaml"},
		{"escaping", ".", "../x.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := manifest.NewIndex(tt.root, map[string][]byte{tt.path: []byte("a: b\n")})
			require.Error(t, err)
		})
	}

	_, err := manifest.NewIndex("../up", nil)
	require.ErrorContains(t, err, "must be a relative path inside the repository")

	ix, err := manifest.NewIndex("team-a/", nil)
	require.NoError(t, err)
	require.Equal(t, "team-a", ix.Root(), "the root is cleaned")
}

func TestAddAndRemoveKeepProblemsCurrent(t *testing.T) {
	ix := newIndex(t, ".", map[string]string{"a.yaml": "not: krm\n"})
	require.Error(t, ix.Check())

	require.NoError(t, ix.Add("a.yaml", []byte(configMapYAML("team-a", "a", "v"))))
	require.NoError(t, ix.Check(), "replacing a file forgets its old problems")

	require.NoError(t, ix.Add("b.yaml", []byte(configMapYAML("team-a", "a", "v"))))
	require.Error(t, ix.Check())
	ix.Remove("b.yaml")
	require.NoError(t, ix.Check(), "removing a file forgets its documents")
}

// A file named as an object's rendering is indexed without a parse only
// when it is one plain document; otherwise it is parsed, and either way the
// index knows what a parse of every file would tell.
func TestARenderedFileIsIndexedAsItsParseWouldBe(t *testing.T) {
	cm := manifest.ObjectID{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "team-a", Name: "app"}
	tests := []struct {
		name   string
		text   string
		parses int
	}{
		{"one plain document", configMapYAML("team-a", "app", "v"), 0},
		{"two documents", configMapYAML("team-a", "app", "v") + "---\n" + configMapYAML("team-a", "other", "v"), 2},
		{"a top-level sops key", configMapYAML("team-a", "app", "v") + "sops:\n  version: 3.9.0\n", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string][]byte{"apps/app.yaml": []byte(tt.text)}
			ix, err := manifest.NewIndexRendered("apps", files, map[string]manifest.ObjectID{"apps/app.yaml": cm})
			require.NoError(t, err)
			parsed, err := manifest.NewIndex("apps", files)
			require.NoError(t, err)
			require.Equal(t, tt.parses, ix.Parses())
			got, ok := ix.Lookup(cm)
			require.True(t, ok)
			require.Equal(t, "apps/app.yaml", got)
			require.Equal(t, parsed.Check(), ix.Check())
		})
	}
}
