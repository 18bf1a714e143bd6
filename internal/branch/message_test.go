package branch

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDefaultMessagesNameTheObjects(t *testing.T) {
	m, err := ParseMessages("", "", "")
	require.NoError(t, err)
	one := MessageData{Target: "team-a/mirror", Changes: []Change{{Operation: "update", Kind: "ConfigMap", Namespace: "team-a", Name: "app"}}}
	msg, err := m.Render(one, false)
	require.NoError(t, err)
	require.Equal(t, "Update ConfigMap team-a/app\n", msg)

	two := MessageData{Target: "team-a/mirror", Changes: []Change{
		{Operation: "create", Kind: "ConfigMap", Namespace: "team-a", Name: "a"},
		{Operation: "delete", Kind: "ClusterRole", Name: "viewer"},
	}}
	msg, err = m.Render(two, false)
	require.NoError(t, err)
	require.Equal(t, "Change 2 objects in team-a/mirror: 1 created, 1 deleted\n\n- create ConfigMap team-a/a\n- delete ClusterRole viewer\n", msg)

	msg, err = m.Render(two, true)
	require.NoError(t, err)
	require.Equal(t, "Reconcile team-a/mirror with the cluster: 1 created, 1 deleted\n\n- create ConfigMap team-a/a\n- delete ClusterRole viewer\n", msg)
}

func TestCustomTemplatesAndTheirErrors(t *testing.T) {
	m, err := ParseMessages("chore({{.Kind}}): {{.Name}} on {{.Branch}}", "", "")
	require.NoError(t, err)
	msg, err := m.Render(MessageData{Branch: "main", Changes: []Change{{Operation: "create", Kind: "Secret", Name: "db"}}}, false)
	require.NoError(t, err)
	require.Equal(t, "chore(Secret): db on main\n", msg)

	_, err = ParseMessages("{{.Kind", "", "")
	require.ErrorContains(t, err, "eventTemplate")

	_, err = ParseMessages("{{.Nope}}", "", "")
	require.ErrorContains(t, err, "eventTemplate", "an unknown field is refused when the template is parsed")
	require.ErrorContains(t, err, "unknown field .Nope")
	_, err = ParseMessages("", `{{define "x"}}{{end}}`, "")
	require.ErrorContains(t, err, "groupTemplate")
	_, err = ParseMessages("", "", "{{$x := .Target}}{{$x}}")
	require.ErrorContains(t, err, "variables are not supported")
}

func TestTemplatesSupportConditionsPipesAndRange(t *testing.T) {
	m, err := ParseMessages(
		`{{if eq .Operation "delete"}}Remove{{else}}{{.Operation | capitalize}}{{end}} {{.Kind | lower}} {{.Name}}{{with .Author}} by {{.}}{{end}}`,
		`{{len .Changes}} on {{.Branch}}:{{range .Changes}} {{.Ref}}{{else}} none{{end}} [{{$.Target}}]`, "")
	require.NoError(t, err)
	msg, err := m.Render(MessageData{Author: "alice", Changes: []Change{{Operation: "delete", Kind: "ConfigMap", Name: "x"}}}, false)
	require.NoError(t, err)
	require.Equal(t, "Remove configmap x by alice\n", msg)
	msg, err = m.Render(MessageData{Changes: []Change{{Operation: "update", Kind: "Secret", Name: "y"}}}, false)
	require.NoError(t, err)
	require.Equal(t, "Update secret y\n", msg)
	msg, err = m.Render(MessageData{Branch: "main", Target: "ns/t", Changes: []Change{{Namespace: "a", Name: "b"}, {Name: "c"}}}, false)
	require.NoError(t, err)
	require.Equal(t, "2 on main: a/b c [ns/t]\n", msg)
}

func TestTheToolsOfTheChangesBecomeChangedWithTrailers(t *testing.T) {
	defaults, err := ParseMessages("", "", "")
	require.NoError(t, err)
	one := MessageData{Changes: []Change{{Operation: "update", Kind: "ConfigMap", Namespace: "a", Name: "b", Tools: []string{"kubectl-edit"}}}}
	msg, err := defaults.Render(one, false)
	require.NoError(t, err)
	require.Equal(t, "Update ConfigMap a/b\n\nChanged-With: kubectl-edit\n", msg)

	several := MessageData{Target: "ns/t", Changes: []Change{
		{Operation: "create", Kind: "ConfigMap", Namespace: "a", Name: "x", Tools: []string{"kubectl-edit", "helm"}},
		{Operation: "delete", Kind: "ConfigMap", Namespace: "a", Name: "y"},
		{Operation: "update", Kind: "ConfigMap", Namespace: "a", Name: "z", Tools: []string{"helm"}},
	}}
	msg, err = defaults.Render(several, false)
	require.NoError(t, err)
	require.Equal(t, "Change 3 objects in ns/t: 1 created, 1 updated, 1 deleted\n\n- create ConfigMap a/x\n- delete ConfigMap a/y\n- update ConfigMap a/z\n\n"+
		"Changed-With: helm\nChanged-With: kubectl-edit\n", msg, "each tool once, sorted by name")

	msg, err = defaults.Render(MessageData{Changes: []Change{{Operation: "delete", Kind: "ConfigMap", Name: "x"}}}, false)
	require.NoError(t, err)
	require.Equal(t, "Delete ConfigMap x\n", msg, "no tool, no trailer")

	custom, err := ParseMessages("{{.Kind}} {{.Name}} via {{.Tools}}\n\nSigned-off-by: bot <bot@example.com>",
		"{{range .Changes}}{{.Name}} ({{.Tools}}) {{end}}[{{.Tools}}]\n\nChanged-With: helm", "")
	require.NoError(t, err)
	msg, err = custom.Render(one, false)
	require.NoError(t, err)
	require.Equal(t, "ConfigMap b via kubectl-edit\n\nSigned-off-by: bot <bot@example.com>\nChanged-With: kubectl-edit\n", msg,
		"the trailer joins the template's own trailer block")
	msg, err = custom.Render(several, false)
	require.NoError(t, err)
	require.Equal(t, "x (kubectl-edit, helm) y () z (helm) [helm, kubectl-edit]\n\nChanged-With: helm\nChanged-With: kubectl-edit\n", msg,
		"a trailer the template writes is not repeated")
}
