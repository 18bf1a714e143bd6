package manifest_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/manifest"
)

// The three documents of a hand-kept multi-document file, each with its own
// comments, so a test can rebuild exactly what must stay byte-identical.
const (
	firstDoc = "# Shared app configuration, owned by team A.\n" +
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: first\n  namespace: team-a\n" +
		"data:\n  key: one   # inline comment\n"
	secondComment = "---\n# The second document's own comment.\n"
	secondBody    = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: second\n  namespace: team-a\ndata:\n  key: two\n"
	thirdDoc      = "--- # marker comment\n" +
		"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: third\n  namespace: team-a\n" +
		"spec:\n  replicas: 1 # pinned\n"
	bundlePath = "apps/bundle.yaml"
	bundle     = firstDoc + secondComment + secondBody + thirdDoc
)

func bundleIndex(t *testing.T) *manifest.Index {
	return newIndex(t, "apps", withReadme("apps", map[string]string{bundlePath: bundle}))
}

func TestUpsertRewritesOnlyItsOwnDocument(t *testing.T) {
	ix := bundleIndex(t)
	updated := configMapYAML("team-a", "second", "changed")

	result := plan(t, ix, upsert(configMapID("team-a", "second"), updated))

	require.Empty(t, result.Refusals)
	require.Equal(t, map[string]string{
		// The other documents, their comments and the "--- # marker comment"
		// line are untouched; the document keeps its own leading comment.
		bundlePath: firstDoc + secondComment + updated + thirdDoc,
	}, contents(result))
}

func TestUpsertOfTheFirstAndLastDocumentsKeepsTheirSiblings(t *testing.T) {
	tests := []struct {
		name string
		op   manifest.Upsert
		want string
	}{
		{
			// The edit keeps the document's own comments too: only the
			// changed value's text is replaced.
			name: "first document keeps the file's header comment",
			op:   upsert(configMapID("team-a", "first"), configMapYAML("team-a", "first", "changed")),
			want: strings.Replace(firstDoc, "key: one", "key: changed", 1) + secondComment + secondBody + thirdDoc,
		},
		{
			name: "last document keeps its marker comment",
			op:   upsert(deploymentID("team-a", "third"), deploymentYAML("team-a", "third", 5)),
			want: firstDoc + secondComment + secondBody + strings.Replace(thirdDoc, "replicas: 1", "replicas: 5", 1),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			result := plan(t, bundleIndex(t), tt.op)
			require.Equal(t, map[string]string{bundlePath: tt.want}, contents(result))
		})
	}
}

func TestDeleteRemovesOnlyItsOwnDocument(t *testing.T) {
	tests := []struct {
		name string
		id   manifest.ObjectID
		want string
	}{
		{"first", configMapID("team-a", "first"), secondComment + secondBody + thirdDoc},
		{"middle", configMapID("team-a", "second"), firstDoc + thirdDoc},
		{"last", deploymentID("team-a", "third"), firstDoc + secondComment + secondBody},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			result := plan(t, bundleIndex(t), manifest.Delete{ID: tt.id})
			require.Equal(t, map[string]string{bundlePath: tt.want}, contents(result))
		})
	}
}

func TestAFileLeftWithoutDocumentsIsDeleted(t *testing.T) {
	ix := bundleIndex(t)

	result := plan(t, ix,
		manifest.Delete{ID: configMapID("team-a", "first")},
		manifest.Delete{ID: configMapID("team-a", "second")},
		manifest.Delete{ID: deploymentID("team-a", "third")},
	)

	require.Equal(t, map[string]string{bundlePath: "<deleted>"}, contents(result))
}

func TestDeletingAnObjectThatIsNotThereChangesNothing(t *testing.T) {
	result := plan(t, bundleIndex(t), manifest.Delete{ID: configMapID("team-a", "missing")})
	require.Empty(t, result.Changes)
}

func TestUpsertMatchesIdentityAcrossVersions(t *testing.T) {
	old := "apiVersion: apps/v1beta1\nkind: Deployment\nmetadata:\n  name: api\n  namespace: team-a\nspec:\n  replicas: 1\n"
	ix := newIndex(t, ".", withReadme(".", map[string]string{"legacy/api.yaml": old}))

	result := plan(t, ix, upsert(deploymentID("team-a", "api"), deploymentYAML("team-a", "api", 2)))

	require.Equal(t, map[string]string{"legacy/api.yaml": deploymentYAML("team-a", "api", 2)}, contents(result),
		"an existing document is edited where it lives, whatever its apiVersion")
}

func TestADocumentOpenedOnItsMarkerLineIsReplacedSafely(t *testing.T) {
	file := "--- {apiVersion: v1, kind: ConfigMap, metadata: {name: flow, namespace: team-a}, data: {key: old}}\n"
	ix := newIndex(t, ".", withReadme(".", map[string]string{"flow.yaml": file}))
	updated := configMapYAML("team-a", "flow", "new")

	result := plan(t, ix, upsert(configMapID("team-a", "flow"), updated))

	require.Equal(t, map[string]string{"flow.yaml": "---\n" + updated}, contents(result))
}

func TestNewObjectsGoToTheirCanonicalPath(t *testing.T) {
	tests := []struct {
		name      string
		root      string
		id        manifest.ObjectID
		sensitive bool
		want      string
	}{
		{"core namespaced", "clusters/prod", configMapID("team-a", "app-config"), false, "clusters/prod/team-a/configmaps/app-config.yaml"},
		{"grouped namespaced", "clusters/prod", deploymentID("team-a", "api"), false, "clusters/prod/team-a/apps/deployments/api.yaml"},
		{"core cluster-scoped", "clusters/prod",
			manifest.ObjectID{Version: "v1", Kind: "Namespace", Resource: "namespaces", Name: "team-a"}, false,
			"clusters/prod/_cluster/namespaces/team-a.yaml"},
		{"grouped cluster-scoped", "clusters/prod",
			manifest.ObjectID{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole", Resource: "clusterroles", Name: "reader"}, false,
			"clusters/prod/_cluster/rbac.authorization.k8s.io/clusterroles/reader.yaml"},
		{"repository root", ".", configMapID("team-a", "app-config"), false, "team-a/configmaps/app-config.yaml"},
		{"sensitive", ".", secretID("team-a", "db"), true, "team-a/secrets/db.sops.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := manifest.CanonicalPath(tt.root, tt.id, tt.sensitive)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestPlanPlacesANewObjectAndBootstrapsTheRoot(t *testing.T) {
	ix := newIndex(t, "team-a-config", map[string]string{})
	doc := configMapYAML("team-a", "app-config", "v")

	result := plan(t, ix, upsert(configMapID("team-a", "app-config"), doc))

	require.Equal(t, map[string]string{
		"team-a-config/README.md":                         string(manifest.BootstrapReadme("team-a-config")),
		"team-a-config/team-a/configmaps/app-config.yaml": doc,
	}, contents(result))
	require.Contains(t, string(manifest.BootstrapReadme("team-a-config")), "written by GitOps Reverser")
	require.Contains(t, string(manifest.BootstrapReadme(".")), "This repository is written by GitOps Reverser")
}

func TestBootstrapOnlyWithAWriteAndOnlyWhatIsMissing(t *testing.T) {
	doc := configMapYAML("team-a", "a", "v")
	t.Run("existing README is kept", func(t *testing.T) {
		ix := newIndex(t, ".", map[string]string{"README.md": "# ours\n"})
		result := plan(t, ix, upsert(configMapID("team-a", "a"), doc))
		require.Equal(t, []string{"team-a/configmaps/a.yaml"}, changedPaths(result))
	})
	t.Run("nothing to write, nothing bootstrapped", func(t *testing.T) {
		ix := newIndex(t, ".", map[string]string{"team-a/configmaps/a.yaml": doc})
		require.Empty(t, plan(t, ix, upsert(configMapID("team-a", "a"), doc)).Changes)
	})
	t.Run("custom bootstrap files", func(t *testing.T) {
		ix := newIndex(t, "gitops", map[string]string{"gitops/README.md": "# ours\n"})
		planner := manifest.Planner{Bootstrap: map[string][]byte{
			"README.md": []byte("# theirs\n"), ".sops.yaml": []byte("creation_rules: []\n"),
		}}
		result, err := planner.Plan(ix, []manifest.Op{upsert(configMapID("team-a", "a"), doc)})
		require.NoError(t, err)
		require.Equal(t, map[string]string{
			"gitops/.sops.yaml":               "creation_rules: []\n",
			"gitops/team-a/configmaps/a.yaml": doc,
		}, contents(result))
	})
}

func TestPlainNewObjectIsAppendedToAnExistingFileAtItsPath(t *testing.T) {
	existing := "# kept\n" + configMapYAML("team-a", "other", "x")
	ix := newIndex(t, ".", withReadme(".", map[string]string{"team-a/configmaps/app.yaml": existing}))
	doc := configMapYAML("team-a", "app", "v")

	result := plan(t, ix, upsert(configMapID("team-a", "app"), doc))

	require.Equal(t, map[string]string{"team-a/configmaps/app.yaml": existing + "---\n" + doc}, contents(result))
}

func TestNoOpUpsertsWriteNothing(t *testing.T) {
	doc := configMapYAML("team-a", "app", "v")
	handWritten := "# Tuned by hand.\nkind: ConfigMap\napiVersion: v1\ndata: {key: 'v'}   # same value\n" +
		"metadata:\n  namespace: team-a\n  name: app\n"
	tests := []struct {
		name     string
		existing string
		upserted string
		wantNoOp bool
	}{
		{"byte-identical", doc, doc, true},
		{"same content, other formatting and comments", handWritten, doc, true},
		{"different value", configMapYAML("team-a", "app", "w"), doc, false},
		// kubectl reads an unquoted yes as a bool: not the same document.
		{"unquoted value a YAML 1.1 reader mistypes", configMapYAML("team-a", "app", "yes"), configMapYAML("team-a", "app", `"yes"`), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix := newIndex(t, ".", withReadme(".", map[string]string{"team-a/configmaps/app.yaml": tt.existing}))

			result := plan(t, ix, upsert(configMapID("team-a", "app"), tt.upserted))

			if tt.wantNoOp {
				require.Empty(t, result.Changes)
				return
			}
			require.Equal(t, map[string]string{"team-a/configmaps/app.yaml": tt.upserted}, contents(result))
		})
	}
}

func TestLastWriteWinsPerObject(t *testing.T) {
	id := configMapID("team-a", "app")
	path := "team-a/configmaps/app.yaml"
	tests := []struct {
		name     string
		existing map[string]string
		ops      []manifest.Op
		want     map[string]string
	}{
		{
			name: "two upserts",
			ops:  []manifest.Op{upsert(id, configMapYAML("team-a", "app", "1")), upsert(id, configMapYAML("team-a", "app", "2"))},
			want: map[string]string{path: configMapYAML("team-a", "app", "2")},
		},
		{
			name:     "upsert then delete",
			existing: map[string]string{path: configMapYAML("team-a", "app", "0")},
			ops:      []manifest.Op{upsert(id, configMapYAML("team-a", "app", "1")), manifest.Delete{ID: id}},
			want:     map[string]string{path: "<deleted>"},
		},
		{
			name:     "delete then upsert",
			existing: map[string]string{path: configMapYAML("team-a", "app", "0")},
			ops:      []manifest.Op{manifest.Delete{ID: id}, upsert(id, configMapYAML("team-a", "app", "1"))},
			want:     map[string]string{path: configMapYAML("team-a", "app", "1")},
		},
		{
			name: "create then delete writes nothing",
			ops:  []manifest.Op{upsert(id, configMapYAML("team-a", "app", "1")), manifest.Delete{ID: id}},
			want: map[string]string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := withReadme(".", map[string]string{})
			for p, content := range tt.existing {
				files[p] = content
			}
			result := plan(t, newIndex(t, ".", files), tt.ops...)
			require.Equal(t, tt.want, contents(result))
		})
	}
}

func TestUpsertYAMLMustBeTheObjectItNames(t *testing.T) {
	ix := newIndex(t, ".", withReadme(".", map[string]string{}))
	good := configMapYAML("team-a", "good", "v")

	result := plan(t, ix,
		upsert(configMapID("team-a", "wrong-name"), configMapYAML("team-a", "other", "v")),
		upsert(configMapID("team-a", "two-docs"), configMapYAML("team-a", "two-docs", "v")+"---\n"+good),
		upsert(configMapID("team-a", "not-yaml"), "data: [unclosed\n"),
		upsert(configMapID("team-a", "empty"), ""),
		upsert(manifest.ObjectID{Version: "v1", Kind: "ConfigMap", Namespace: "team-a", Name: "no-resource"},
			configMapYAML("team-a", "no-resource", "v")),
		upsert(configMapID("team-a", "good"), good),
	)

	require.Equal(t, map[string]manifest.RefusalReason{
		"wrong-name":  manifest.RefusalInvalidDocument,
		"two-docs":    manifest.RefusalInvalidDocument,
		"not-yaml":    manifest.RefusalInvalidDocument,
		"empty":       manifest.RefusalInvalidDocument,
		"no-resource": manifest.RefusalIncompleteIdentity,
	}, refusalReasons(result))
	require.Equal(t, map[string]string{"team-a/configmaps/good.yaml": good}, contents(result),
		"refusals do not stop the rest of the batch")
}

// TestAConfigMapNamedKustomizationIsWrittenUnderAnEscapedName: its
// canonical file would be kustomization.yaml, which kustomize reads as its
// build file; it goes to _kustomization.yaml instead, and is found there
// again by identity, updated in place and deleted.
func TestAConfigMapNamedKustomizationIsWrittenUnderAnEscapedName(t *testing.T) {
	id := configMapID("team-a", "kustomization")
	for _, tt := range []struct {
		name      string
		placement manifest.Placement
		want      string
	}{
		{"canonical", manifest.Placement{}, "team-a/configmaps/_kustomization.yaml"},
		{"declared", manifest.Placement{Default: "{namespace}/{name}.yml"}, "team-a/_kustomization.yml"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ix := newIndex(t, ".", withReadme(".", map[string]string{}))
			planner := manifest.Planner{Placement: tt.placement}

			created, err := planner.Plan(ix, []manifest.Op{upsert(id, configMapYAML("team-a", "kustomization", "v1"))})
			require.NoError(t, err)
			require.Empty(t, created.Refusals)
			require.Equal(t, map[string]string{tt.want: configMapYAML("team-a", "kustomization", "v1")}, contents(created))
			require.NoError(t, ix.Apply(created))

			updated, err := planner.Plan(ix, []manifest.Op{upsert(id, configMapYAML("team-a", "kustomization", "v2"))})
			require.NoError(t, err)
			require.Equal(t, map[string]string{tt.want: configMapYAML("team-a", "kustomization", "v2")}, contents(updated))
			require.NoError(t, ix.Apply(updated))

			deleted, err := planner.Plan(ix, []manifest.Op{manifest.Delete{ID: id}})
			require.NoError(t, err)
			require.Equal(t, map[string]string{tt.want: "<deleted>"}, contents(deleted))
		})
	}
}

func TestPlanRefusesASubtreeTheGateRefuses(t *testing.T) {
	ix := newIndex(t, ".", map[string]string{"notes.yaml": "just: notes\n"})

	result, err := manifest.Plan(ix, []manifest.Op{upsert(configMapID("team-a", "a"), configMapYAML("team-a", "a", "v"))})

	var unsupported *manifest.UnsupportedContentError
	require.True(t, errors.As(err, &unsupported), "got %v", err)
	require.Equal(t, []string{"notes.yaml"}, unsupported.Paths())
	require.Empty(t, result.Changes, "a refused subtree is never written into")
}

func TestApplyKeepsTheIndexCurrent(t *testing.T) {
	ix := newIndex(t, "gitops", map[string]string{"gitops/team-a/bundle.yaml": firstDoc + secondComment + secondBody})
	created := configMapYAML("team-a", "new", "1")

	first := plan(t, ix,
		upsert(configMapID("team-a", "new"), created),
		upsert(configMapID("team-a", "second"), configMapYAML("team-a", "second", "changed")),
	)
	require.NoError(t, ix.Apply(first))

	require.True(t, ix.Has("gitops/README.md"))
	where, found := ix.Lookup(configMapID("team-a", "new"))
	require.True(t, found)
	require.Equal(t, "gitops/team-a/configmaps/new.yaml", where)
	require.Empty(t, plan(t, ix,
		upsert(configMapID("team-a", "new"), created),
		upsert(configMapID("team-a", "second"), configMapYAML("team-a", "second", "changed")),
	).Changes, "replaying the same state after Apply is a no-op")

	second := plan(t, ix, manifest.Delete{ID: configMapID("team-a", "new")}, manifest.Delete{ID: configMapID("team-a", "first")})
	require.Equal(t, map[string]string{
		"gitops/team-a/configmaps/new.yaml": "<deleted>",
		"gitops/team-a/bundle.yaml":         secondComment + configMapYAML("team-a", "second", "changed"),
	}, contents(second))
	require.NoError(t, ix.Apply(second))
	require.False(t, ix.Has("gitops/team-a/configmaps/new.yaml"))
	_, found = ix.Lookup(configMapID("team-a", "first"))
	require.False(t, found)
	require.NoError(t, ix.Check())
}

func changedPaths(result manifest.Result) []string {
	paths := make([]string, 0, len(result.Changes))
	for _, change := range result.Changes {
		paths = append(paths, change.Path)
	}
	return paths
}

func TestCommentOnlySectionsAndAMissingFinalNewlineSurviveEdits(t *testing.T) {
	notes := "---\n# Notes kept between the documents.\n"
	a := configMapYAML("team-a", "a", "1")
	b := strings.TrimSuffix("---\n"+configMapYAML("team-a", "b", "1"), "\n")
	ix := newIndex(t, ".", withReadme(".", map[string]string{"team-a/pair.yaml": a + notes + b}))

	result := plan(t, ix,
		manifest.Delete{ID: configMapID("team-a", "a")},
		upsert(configMapID("team-a", "b"), configMapYAML("team-a", "b", "2")),
	)

	// The edited document keeps its layout, down to the missing newline.
	require.Equal(t, map[string]string{"team-a/pair.yaml": notes + strings.Replace(b, "key: 1", "key: 2", 1)}, contents(result))
}

func TestResultListsTheObjectsItWrites(t *testing.T) {
	ix := bundleIndex(t)

	result := plan(t, ix,
		upsert(configMapID("team-a", "first"), firstDoc), // same content: a no-op
		upsert(configMapID("team-a", "second"), configMapYAML("team-a", "second", "changed")),
		manifest.Delete{ID: deploymentID("team-a", "third")},
		upsert(configMapID("team-a", "new"), configMapYAML("team-a", "new", "v")),
		upsert(configMapID("team-a", "refused"), configMapYAML("team-a", "someone-else", "v")),
	)

	require.Equal(t, []manifest.ObjectChange{
		{ID: deploymentID("team-a", "third"), Path: bundlePath, Action: manifest.ActionDelete},
		{ID: configMapID("team-a", "new"), Path: "apps/team-a/configmaps/new.yaml", Action: manifest.ActionCreate, Placement: manifest.PlacementCanonical},
		{ID: configMapID("team-a", "second"), Path: bundlePath, Action: manifest.ActionUpdate},
	}, result.Objects, "the unchanged first document and the refused object are not listed")
}

func TestAPlaintextObjectIsNeverWrittenIntoItsOldSopsFile(t *testing.T) {
	// The type was sensitive when its file was written, and no longer is.
	path := "mirror/team-a/secrets/db.sops.yaml"
	ix := newIndex(t, "mirror", withReadme("mirror", map[string]string{path: encryptedSecretYAML("team-a", "db", "c2VjcmV0")}))
	plain := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: team-a\ndata:\n  password: cGxhaW4=\n"
	res, err := manifest.Plan(ix, []manifest.Op{upsert(secretID("team-a", "db"), plain)})
	require.NoError(t, err)
	require.Empty(t, res.Changes, "nothing is written")
	require.Len(t, res.Refusals, 1)
	require.Equal(t, manifest.RefusalInvalidPlacement, res.Refusals[0].Reason)
	require.Equal(t, path, res.Refusals[0].Path)
}

// A new file of one document is that document's bytes, not a copy: the
// index, the blob cache and the commit then share the rendering the write
// carried. Folded into the index, it is found without parsing it again.
func TestANewFileOfOneDocumentSharesTheWrittenBytes(t *testing.T) {
	ix := newIndex(t, "apps", withReadme("apps", nil))
	written := []byte(configMapYAML("team-a", "fresh", "v"))
	result := plan(t, ix, manifest.Upsert{ID: configMapID("team-a", "fresh"), YAML: written})

	require.Len(t, result.Changes, 1)
	content := result.Changes[0].Content
	require.Equal(t, written, content)
	require.Same(t, &written[0], &content[0], "the new file is the written document's own bytes")
	parses := ix.Parses()
	require.NoError(t, ix.Apply(result))
	require.Equal(t, parses, ix.Parses(), "the index takes the planned file without parsing it")
	path, ok := ix.Lookup(configMapID("team-a", "fresh"))
	require.True(t, ok)
	require.Equal(t, result.Changes[0].Path, path)
}
