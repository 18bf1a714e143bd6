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

	m, err = ParseMessages("{{.Nope}}", "", "")
	require.NoError(t, err)
	_, err = m.Render(MessageData{Changes: []Change{{Name: "x"}}}, false)
	require.ErrorContains(t, err, "eventTemplate")
}
