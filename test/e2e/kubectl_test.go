package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
)

// tableOf asks the API server for kind in ns as kubectl get does (a Table,
// built from the CRD's printer columns) and returns each row's cells by
// column name, and the columns' priorities.
func tableOf(t *testing.T, ns, kind string) (rows []map[string]string, priority map[string]int32) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(env.kube.Config())
	require.NoError(t, err)
	raw, err := cs.RESTClient().Get().AbsPath("/apis", v1alpha3.GroupVersion.Group, v1alpha3.GroupVersion.Version, "namespaces", ns, kind).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(context.Background())
	require.NoError(t, err, "%s", raw)
	var table metav1.Table
	require.NoError(t, json.Unmarshal(raw, &table))
	priority = map[string]int32{}
	for _, c := range table.ColumnDefinitions {
		priority[c.Name] = c.Priority
	}
	for _, r := range table.Rows {
		row := map[string]string{}
		for i, cell := range r.Cells {
			if cell != nil {
				row[table.ColumnDefinitions[i].Name] = fmt.Sprint(cell)
			}
		}
		rows = append(rows, row)
	}
	return rows, priority
}

// TestKubectlGetShowsTheLastCommitAndReadysMessage: kubectl get gittarget
// prints the last commit (short SHA, its age) and Ready's message, and
// kubectl get gitprovider the message; suspension shows with -o wide.
func TestKubectlGetShowsTheLastCommitAndReadysMessage(t *testing.T) {
	m := newMirror(t, "kubectl-columns", "configmaps")
	apply(t, configMap(m.ns, "app", map[string]string{"k": "v"}))
	startOperator(t)
	eventually(t, "the ConfigMap in Git", func() bool {
		return gitFile(t, m.repo, m.path+"/kubectl-columns/configmaps/app.yaml") != ""
	})
	waitReady(t, m.ns, m.target)
	head, err := env.git.Git(m.repo, "rev-parse", "main")
	require.NoError(t, err)
	head = strings.TrimSpace(head)

	var row map[string]string
	var priority map[string]int32
	eventually(t, "the GitTarget's row naming the head commit", func() bool {
		var rows []map[string]string
		rows, priority = tableOf(t, m.ns, "gittargets")
		if len(rows) != 1 {
			return false
		}
		row = rows[0]
		return row["Last Commit"] == head[:7]
	})
	require.Equal(t, "True", row["Ready"])
	require.Equal(t, v1alpha3.ReasonSucceeded, row["Reason"])
	require.NotEmpty(t, row["Committed"], "the commit's age")
	require.Contains(t, row["Message"], "mirroring")
	require.Equal(t, "false", row["Suspended"], "a boolean column of an unset field")
	for _, column := range []string{"Ready", "Reason", "Last Commit", "Committed", "Message"} {
		require.Zero(t, priority[column], "%s shows without -o wide", column)
	}
	require.Equal(t, int32(1), priority["Suspended"], "Suspended shows with -o wide; Reason says Suspended anyway")

	providers, priority := tableOf(t, m.ns, "gitproviders")
	require.Len(t, providers, 1)
	require.Contains(t, providers[0]["Message"], "the repository answers")
	require.Zero(t, priority["Message"])
}

// TestDescribeShowsEventsForAFailingProviderAndTarget: a GitProvider whose
// credentials the remote refuses, and the GitTarget writing through it,
// each get a Warning Event saying why (kubectl describe lists them); once
// the Secret is fixed a Normal Event says they are Ready. No Event names
// the password.
func TestDescribeShowsEventsForAFailingProviderAndTarget(t *testing.T) {
	const ns, wrongPassword = "events-failing", "not-the-token-7c1f"
	_, err := env.git.CreateBareRepo(ns)
	require.NoError(t, err)
	apply(t,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&v1alpha3.ClusterProvider{ObjectMeta: metav1.ObjectMeta{Name: "default"},
			Spec: v1alpha3.ClusterProviderSpec{AllowedNamespaces: &v1alpha3.NamespacePolicy{Selector: &metav1.LabelSelector{}}}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "git-credentials"},
			StringData: map[string]string{"username": gitUser, "password": wrongPassword}},
		gitProvider(ns, "repo", env.git.HTTPURL(ns)),
		&v1alpha3.GitTarget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mirror"},
			Spec: v1alpha3.GitTargetSpec{ProviderRef: v1alpha3.GitProviderReference{Name: "repo"}, Branch: "main", Path: "clusters/" + ns}},
	)
	startOperator(t)

	providerWarning := waitForEvent(t, ns, "GitProvider", "repo", corev1.EventTypeWarning, v1alpha3.ReasonUnauthorized)
	require.True(t, strings.HasPrefix(providerWarning.Note, "Stalled: "), providerWarning.Note)
	require.NotContains(t, providerWarning.Note, wrongPassword)
	targetWarning := waitForEvent(t, ns, "GitTarget", "mirror", corev1.EventTypeWarning, v1alpha3.ReasonGitProviderNotReady)
	require.NotContains(t, targetWarning.Note, wrongPassword)

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "git-credentials"}}
	edit(t, secret, func() { secret.Data = map[string][]byte{"username": []byte(gitUser), "password": []byte(gitPassword)} })
	recovered := waitForEvent(t, ns, "GitProvider", "repo", corev1.EventTypeNormal, v1alpha3.ReasonSucceeded)
	require.True(t, strings.HasPrefix(recovered.Note, "Ready: "), recovered.Note)
	waitForEvent(t, ns, "GitTarget", "mirror", corev1.EventTypeNormal, v1alpha3.ReasonSucceeded)
}

// waitForEvent waits for an Event of type and reason about the object and
// returns it.
func waitForEvent(t *testing.T, ns, kind, name, eventType, reason string) eventsv1.Event {
	t.Helper()
	var found eventsv1.Event
	eventually(t, fmt.Sprintf("a %s Event %s on %s %s", eventType, reason, kind, name), func() bool {
		var list eventsv1.EventList
		if err := env.kube.Client().List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			return false
		}
		for _, e := range list.Items {
			if e.Regarding.Kind == kind && e.Regarding.Name == name && e.Type == eventType && e.Reason == reason {
				found = e
				return true
			}
		}
		return false
	})
	return found
}
