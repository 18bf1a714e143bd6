package chart

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/encryption"
)

// TestSecretsMirrorWithANamespacedGrantAndNoValueLeaks installs the chart
// granting Secrets (rbac.mirroredResources with namespaces) and credentials
// (rbac.credentialNamespaces) in one namespace only, and runs the operator as
// its ServiceAccount: a Secret there is mirrored SOPS-encrypted, the
// ServiceAccount still cannot list another namespace's Secrets, and no
// Secret value of the flow (a forge password, a refused password, an age
// key, the mirrored Secret's value) appears in the operator's log (debug
// level included), an Event, a status or a metric label.
func TestSecretsMirrorWithANamespacedGrantAndNoValueLeaks(t *testing.T) {
	const (
		release, opNS, team, sa = "leak", "leak-operator", "leak-team", "leak-gitops-reverser"
		target, path            = "mirror", "clusters/leak"
		dbPassword              = "leak-db-password-correct-horse"
		wrongPassword           = "leak-wrong-password-4711"
	)
	values := "rbac:\n  credentialNamespaces: [" + team + "]\n" +
		"  mirroredResources:\n" +
		"    - {apiGroups: [\"\"], resources: [configmaps]}\n" +
		"    - {apiGroups: [\"\"], resources: [secrets], namespaces: [" + team + "]}\n"
	objs := render(t, release, opNS, values)
	ensureNamespace(t, team)
	install(t, objs)
	_, err := env.git.CreateBareRepo(team)
	require.NoError(t, err)

	identity, recipient, err := encryption.GenerateIdentity(time.Now())
	require.NoError(t, err)
	provider, credentials := tokenProvider(team, "repo", team, "git-credentials")
	wrong, wrongCredentials := tokenProvider(team, "wrong", team, "wrong-credentials")
	wrongCredentials.StringData["password"] = wrongPassword
	create(t, localClusterProvider(), credentials, provider, wrongCredentials, wrong,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "sops-age"},
			Data: map[string][]byte{"age.agekey": []byte(identity)}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "db"},
			StringData: map[string]string{"password": dbPassword}},
		// Refused (the declared placement names kustomization.yaml, a
		// build file): a Warning Event.
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "kustomization"}, Data: map[string]string{"k": "v"}},
		&v1alpha3.GitTarget{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: target},
			Spec: v1alpha3.GitTargetSpec{ProviderRef: v1alpha3.GitProviderReference{Name: "repo"}, Branch: "main", Path: path,
				Placement:  &v1alpha3.PlacementSpec{ByType: map[string]v1alpha3.PathTemplate{"v1/configmaps": "{namespace}/kustomization.yaml"}},
				Encryption: &v1alpha3.EncryptionSpec{Age: v1alpha3.AgeEncryption{SecretRef: &v1alpha3.LocalObjectReference{Name: "sops-age"}}}}},
		&v1alpha3.WatchRule{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "rule"},
			Spec: v1alpha3.WatchRuleSpec{TargetRef: v1alpha3.TargetReference{Name: target},
				Rules: []v1alpha3.NamespacedResourceRule{{ResourceSelector: v1alpha3.ResourceSelector{Resources: []string{"secrets", "configmaps"}}}}}},
	)

	opts := operatorOptions(t, objs, opNS, sa)
	startOperatorWith(t, opts)

	t.Run("a Secret is mirrored encrypted with its namespace's grant", func(t *testing.T) {
		file := path + "/" + team + "/secrets/db.sops.yaml"
		require.Eventually(t, func() bool { return gitFile(team, file) != "" }, 60*time.Second, 200*time.Millisecond,
			"the encrypted Secret in Git at %s; conditions: %+v", file, targetConditions(t, team, target))
		content := gitFile(team, file)
		require.Contains(t, content, "ENC[", "the value is encrypted")
		require.Contains(t, content, recipient, "for the target's age recipient")
		require.NotContains(t, content, base64.StdEncoding.EncodeToString([]byte(dbPassword)))
		require.NotContains(t, content, dbPassword)
		require.False(t, serviceAccountMay(t, opNS, sa, "list", opNS+"-elsewhere"), "no Secret list beyond the mirrored namespace")
		require.False(t, serviceAccountMay(t, opNS, sa, "list", ""), "no Secret list cluster-wide")
	})

	// Sentinels that the flow also went through a refusal and a failure.
	waitProviderReason(t, team, "wrong", v1alpha3.ConditionReady, v1alpha3.ReasonUnauthorized)
	require.Eventually(t, func() bool {
		c := meta.FindStatusCondition(targetConditions(t, team, target), v1alpha3.ConditionObjectsWritten)
		return c != nil && c.Reason == v1alpha3.ReasonAuxiliaryPath
	}, 60*time.Second, 200*time.Millisecond, "the refused ConfigMap reported; conditions: %+v", targetConditions(t, team, target))
	// Not any Event: the providers' and target's Ready transitions are
	// Events too.
	require.Eventually(t, func() bool { return strings.Contains(eventsText(t, team), "not writing") }, 30*time.Second, 200*time.Millisecond,
		"the refusal's Warning Event recorded")

	t.Run("no Secret value in logs, Events, statuses or metric labels", func(t *testing.T) {
		needles := secretNeedles(map[string]string{
			"the forge password": gitPassword, "the refused password": wrongPassword,
			"the age identity": identity, "the mirrored Secret's value": dbPassword,
		})
		surfaces := map[string]string{
			"the operator's log":  operatorLog.String(),
			"the Events":          eventsText(t, team),
			"the statuses":        statusesText(t, team),
			"the metrics' labels": metricLabels(t, opts.Registry.(prometheus.Gatherer)),
		}
		for surface, text := range surfaces {
			require.NotEmpty(t, text, "%s has something to scan", surface)
			for _, n := range needles {
				require.NotContains(t, text, n.text, "%s holds %s", surface, n.what)
			}
		}
	})
}

// secretNeedles are values as they are, base64-encoded, and each long line
// of a multi-line value (an age identity file).
func secretNeedles(values map[string]string) []needle {
	var out []needle
	for what, value := range values {
		out = append(out, needle{value, what}, needle{base64.StdEncoding.EncodeToString([]byte(value)), what + " (base64)"})
		for _, line := range strings.Split(value, "\n") {
			if line = strings.TrimSpace(line); len(line) >= 32 && !strings.HasPrefix(line, "#") {
				out = append(out, needle{line, what + " (a line of it)"})
			}
		}
	}
	return out
}

type needle struct{ text, what string }

// eventsText is every Event of namespace (both Event APIs) as JSON, empty
// when there are none.
func eventsText(t *testing.T, namespace string) string {
	t.Helper()
	var core corev1.EventList
	require.NoError(t, env.kube.Client().List(ctx(t), &core, client.InNamespace(namespace)))
	var events eventsv1.EventList
	require.NoError(t, env.kube.Client().List(ctx(t), &events, client.InNamespace(namespace)))
	if len(core.Items)+len(events.Items) == 0 {
		return ""
	}
	return toJSON(t, core.Items) + toJSON(t, events.Items)
}

// statusesText is the status of every operator object in namespace (and
// the cluster-scoped ClusterProviders) as JSON.
func statusesText(t *testing.T, namespace string) string {
	t.Helper()
	lists := []client.ObjectList{&v1alpha3.GitProviderList{}, &v1alpha3.GitTargetList{}, &v1alpha3.WatchRuleList{}}
	var out strings.Builder
	for _, list := range lists {
		require.NoError(t, env.kube.Client().List(ctx(t), list, client.InNamespace(namespace)))
		out.WriteString(toJSON(t, list))
	}
	var cps v1alpha3.ClusterProviderList
	require.NoError(t, env.kube.Client().List(ctx(t), &cps))
	out.WriteString(toJSON(t, cps))
	return out.String()
}

// metricLabels is every label value of every gathered metric, one a line.
func metricLabels(t *testing.T, g prometheus.Gatherer) string {
	t.Helper()
	families, err := g.Gather()
	require.NoError(t, err)
	var out strings.Builder
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				out.WriteString(f.GetName() + " " + l.GetName() + "=" + l.GetValue() + "\n")
			}
		}
	}
	return out.String()
}

func toJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}
