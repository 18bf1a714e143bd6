package manifest_test

import (
	"path"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/manifest"
)

// longName is the longest name a ConfigMap may have: a 253-character DNS
// subdomain.
var longName = strings.Repeat("a", 253)

func TestFitSegmentShortensOnlyWhatDoesNotFit(t *testing.T) {
	tests := []struct {
		name, stem, suffix, want string
	}{
		{"short name is kept", "app", ".yaml", "app.yaml"},
		{"exactly 255 bytes is kept", strings.Repeat("b", 250), ".yaml", strings.Repeat("b", 250) + ".yaml"},
		{"exactly 255 bytes with .sops.yaml is kept", strings.Repeat("b", 245), ".sops.yaml",
			strings.Repeat("b", 245) + ".sops.yaml"},
		{"exactly 255 bytes of directory is kept", strings.Repeat("b", 255), "", strings.Repeat("b", 255)},
		// The shortened forms are pinned: a change would move every long-named
		// object's next new file away from where earlier releases put it.
		{"253-character name", longName, ".yaml", strings.Repeat("a", 233) + "-32859a3ab65ac529.yaml"},
		{"253-character name, sensitive", longName, ".sops.yaml", strings.Repeat("a", 228) + "-32859a3ab65ac529.sops.yaml"},
		{"256-byte directory", strings.Repeat("a", 256), "", strings.Repeat("a", 238) + "-02d7160d77e18c64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := manifest.FitSegment(tt.stem, tt.suffix)
			require.Equal(t, tt.want, got)
			require.LessOrEqual(t, len(got), manifest.MaxSegmentBytes)
		})
	}
}

func TestFitSegmentOneByteOverIsShortenedToTheLimit(t *testing.T) {
	for _, suffix := range []string{".yaml", ".yml", ".sops.yaml", ""} {
		stem := strings.Repeat("c", manifest.MaxSegmentBytes-len(suffix)+1)
		got := manifest.FitSegment(stem, suffix)
		require.Len(t, got, manifest.MaxSegmentBytes, suffix)
		require.True(t, strings.HasSuffix(got, suffix), got)
	}
}

func TestFitSegmentNeverCutsInsideARune(t *testing.T) {
	// One rune of each UTF-8 width, and offsets that put the cut on every
	// byte of a rune.
	for _, r := range []string{"é", "日", "😀"} {
		for offset := range 4 {
			name := strings.Repeat("x", offset) + strings.Repeat(r, 300/len(r))
			for _, suffix := range []string{".yaml", ".sops.yaml"} {
				got := manifest.FitSegment(name, suffix)
				require.True(t, utf8.ValidString(got), "%q", got)
				require.LessOrEqual(t, len(got), manifest.MaxSegmentBytes)
				require.Greater(t, len(got), manifest.MaxSegmentBytes-utf8.UTFMax, "at most one rune is given up")
				prefix := got[:strings.LastIndex(got, "-")]
				require.True(t, strings.HasPrefix(name, prefix), "%q keeps a prefix of the name", got)
			}
		}
	}
}

func TestFitSegmentIsStableAndKeepsNamesApart(t *testing.T) {
	// Long names that share everything FitSegment keeps of them.
	a, b := longName+"-one", longName+"-two"
	require.Equal(t, manifest.FitSegment(a, ".yaml"), manifest.FitSegment(a, ".yaml"))
	require.NotEqual(t, manifest.FitSegment(a, ".yaml"), manifest.FitSegment(b, ".yaml"))
}

func TestCanonicalPathFitsEveryComponent(t *testing.T) {
	longGroup := strings.Repeat("g", 250) + ".io"
	id := manifest.ObjectID{Group: longGroup, Version: "v1", Kind: "Widget", Resource: "widgets",
		Namespace: "team-a", Name: longName}

	plain, err := manifest.CanonicalPath("root", id, false)
	require.NoError(t, err)
	require.Equal(t, path.Join("root/team-a", longGroup, "widgets", manifest.FitSegment(longName, ".yaml")), plain,
		"a 253-byte group fits as it is; the name does not")
	sensitive, err := manifest.CanonicalPath("root", id, true)
	require.NoError(t, err)
	require.Equal(t, path.Join("root/team-a", longGroup, "widgets", manifest.FitSegment(longName, ".sops.yaml")), sensitive)
	for _, p := range []string{plain, sensitive} {
		requireComponentsFit(t, p)
	}
}

func TestCanonicalPathRefusesAPathLongerThanTheLimit(t *testing.T) {
	root := strings.Repeat(strings.Repeat("r", 200)+"/", 10)[:2000]
	_, err := manifest.CanonicalPath(root, configMapID("team-a", longName), false)
	require.ErrorContains(t, err, "more than 2048")
}

func TestRenderPathFitsEveryComponent(t *testing.T) {
	id := configMapID("team-a", longName)
	got, err := manifest.RenderPath("root", "{namespace}/{name}/{kind}-{name}.yml", id, false)
	require.NoError(t, err)
	require.Equal(t, path.Join("root/team-a", manifest.FitSegment(longName, ""),
		manifest.FitSegment("ConfigMap-"+longName, ".yml")), got)
	requireComponentsFit(t, got)

	sensitive, err := manifest.RenderPath("root", "{namespace}/{kind}-{name}.yaml", secretID("team-a", longName), true)
	require.NoError(t, err)
	require.Equal(t, path.Join("root/team-a", manifest.FitSegment("Secret-"+longName, ".sops.yaml")), sensitive)
}

func TestPlacementRefusesARenderedPathLongerThanTheLimit(t *testing.T) {
	// Nine 255-byte directories are more than 2048 bytes.
	deep := manifest.Placement{Default: strings.Repeat("{name}/", 9) + "{name}.yaml"}
	ix := newIndex(t, "root", withReadme("root", nil))

	result := planWith(t, deep, ix, upsert(configMapID("team-a", longName), configMapYAML("team-a", longName, "v")))

	require.Empty(t, result.Changes)
	require.Equal(t, map[string]manifest.RefusalReason{longName: manifest.RefusalInvalidPlacement}, refusalReasons(result))
}

// TestAShortenedFileIsFoundAgainByIdentity follows a long-named object
// through its life: created at its shortened path, found again by a fresh
// index (a restart reads the repository anew), updated in place, and
// removed both by a delete and by a sweep.
func TestAShortenedFileIsFoundAgainByIdentity(t *testing.T) {
	id := configMapID("team-a", longName)
	want := "root/team-a/configmaps/" + manifest.FitSegment(longName, ".yaml")
	created := plan(t, newIndex(t, "root", withReadme("root", nil)), upsert(id, configMapYAML("team-a", longName, "v1")))
	require.Equal(t, map[string]string{want: configMapYAML("team-a", longName, "v1")}, contents(created))

	restarted := newIndex(t, "root", withReadme("root", contents(created)))
	located, ok := restarted.Lookup(id)
	require.True(t, ok)
	require.Equal(t, want, located)

	updated := plan(t, restarted, upsert(id, configMapYAML("team-a", longName, "v2")))
	require.Equal(t, map[string]string{want: configMapYAML("team-a", longName, "v2")}, contents(updated))
	require.Equal(t, []manifest.ObjectChange{{ID: id, Path: want, Action: manifest.ActionUpdate}}, updated.Objects)
	require.NoError(t, restarted.Apply(updated))

	deleted := plan(t, restarted, manifest.Delete{ID: id})
	require.Equal(t, map[string]string{want: "<deleted>"}, contents(deleted))

	swept := manifest.Sweep(restarted, manifest.SweepScope{Kind: "ConfigMap", Namespace: "team-a"}, nil)
	require.Len(t, swept, 1)
	require.True(t, swept[0].ID.SameObject(id))
	require.Equal(t, contents(deleted), contents(plan(t, restarted, swept[0])))
}

func requireComponentsFit(t *testing.T, p string) {
	t.Helper()
	require.LessOrEqual(t, len(p), manifest.MaxPathBytes)
	for _, component := range strings.Split(p, "/") {
		require.LessOrEqual(t, len(component), manifest.MaxSegmentBytes, component)
	}
}

// TestAFileNoCheckoutCanCreateIsMovedOnItsNextWrite: a file an earlier
// release wrote with a 258-byte name commits but cannot be checked out.
// The next write of its object places it anew, at the shortened path; its
// other documents stay until their own writes move them.
func TestAFileNoCheckoutCanCreateIsMovedOnItsNextWrite(t *testing.T) {
	id, other := configMapID("team-a", longName), configMapID("team-a", longName+"x")
	overlong := "root/team-a/configmaps/" + longName + ".yaml"
	bundled := "root/team-a/" + longName + "-all.yaml"
	shortened := "root/team-a/configmaps/" + manifest.FitSegment(longName, ".yaml")
	tests := []struct {
		name  string
		files map[string]string
		want  map[string]string
	}{
		{"alone in its file: the file moves",
			map[string]string{overlong: configMapYAML("team-a", longName, "v1")},
			map[string]string{overlong: "<deleted>", shortened: configMapYAML("team-a", longName, "v1")}},
		{"sharing its file: only its document moves",
			map[string]string{bundled: configMapYAML("team-a", longName, "v1") + "---\n" + configMapYAML("team-a", longName+"x", "v1")},
			map[string]string{bundled: "---\n" + configMapYAML("team-a", longName+"x", "v1"), shortened: configMapYAML("team-a", longName, "v1")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix := newIndex(t, "root", withReadme("root", tt.files))

			result := plan(t, ix, upsert(id, configMapYAML("team-a", longName, "v1")))

			require.Empty(t, result.Refusals)
			require.Equal(t, tt.want, contents(result), "moved even though its content did not change")
			require.Equal(t, []manifest.ObjectChange{{ID: id, Path: shortened, Action: manifest.ActionUpdate}}, result.Objects)
			_, stillThere := ix.Lookup(other)
			require.Equal(t, len(tt.files[bundled]) > 0, stillThere)
		})
	}
}

func TestAFileThatFitsIsNeverMoved(t *testing.T) {
	// 250 bytes and .yaml: exactly 255, a name any checkout can create.
	name := strings.Repeat("f", 250)
	at := "root/team-a/configmaps/" + name + ".yaml"
	ix := newIndex(t, "root", withReadme("root", map[string]string{at: configMapYAML("team-a", name, "v1")}))

	require.Empty(t, plan(t, ix, upsert(configMapID("team-a", name), configMapYAML("team-a", name, "v1"))).Changes)
}
