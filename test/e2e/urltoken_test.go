package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
)

// TestATokenInAStoredURLNeverShows: the schema refuses a password in
// spec.url, but a GitProvider stored before that rule (an upgrade) still
// has one. Its token must not reach a condition, an Event or the log:
// not when the URL works, not when the remote refuses it, not on every
// retry of a remote that does not answer.
func TestATokenInAStoredURLNeverShows(t *testing.T) {
	const wrongToken, unansweredToken = "wrong-token-4711", "unanswered-token-4712"
	m := newMirror(t, "url-token")
	withURLPasswordsAccepted(t, func() {
		for name, url := range map[string]string{
			"in-url":     strings.Replace(env.git.HTTPURL(m.repo), "://", "://"+gitUser+":"+gitPassword+"@", 1),
			"wrong":      strings.Replace(env.git.HTTPURL(m.repo), "://", "://"+gitUser+":"+wrongToken+"@", 1),
			"unanswered": "http://" + gitUser + ":" + unansweredToken + "@127.0.0.1:9/url-token-nowhere.git",
		} {
			provider := gitProvider(m.ns, name, url)
			provider.Spec.SecretRef = nil // the URL is the credential
			apply(t, provider)
		}
	})
	apply(t,
		&v1alpha3.GitTarget{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "in-url"},
			Spec: v1alpha3.GitTargetSpec{ProviderRef: v1alpha3.GitProviderReference{Name: "in-url"}, Branch: "main", Path: "in-url"}},
		&v1alpha3.GitTarget{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "unanswered"},
			Spec: v1alpha3.GitTargetSpec{ProviderRef: v1alpha3.GitProviderReference{Name: "unanswered"}, Branch: "main", Path: "x"}},
		watchRule(m.ns, "in-url", "in-url", "configmaps"),
		configMap(m.ns, "mirrored", map[string]string{"k": "v"}),
	)
	startOperator(t)

	eventually(t, "the ConfigMap in Git through the URL's credentials", func() bool {
		return gitFile(t, m.repo, "in-url/url-token/configmaps/mirrored.yaml") != ""
	})
	// Its status is written too: the rule refuses a password on create only.
	waitProviderReason(t, m.ns, "in-url", v1alpha3.ReasonSucceeded)
	wrong := waitProviderReason(t, m.ns, "wrong", v1alpha3.ReasonUnauthorized)
	require.Contains(t, wrong.Message, gitUser+":xxxxx@", "the URL is shown, its password hidden")
	waitProviderReason(t, m.ns, "unanswered", v1alpha3.ReasonRepositoryUnreachable)
	eventually(t, "the unanswered remote retried and logged", func() bool {
		return strings.Count(operatorLog.String(), "127.0.0.1:9/url-token-nowhere.git") >= 2
	})

	events, err := allEvents()
	require.NoError(t, err)
	surfaces := map[string]string{"the statuses": statusesOf(t, m.ns), "the Events": events, "the operators' log": operatorLog.String()}
	for surface, text := range surfaces {
		for _, token := range []string{gitPassword, wrongToken, unansweredToken} {
			require.Empty(t, linesWith(text, token), "%s hold a token of a spec.url", surface)
		}
	}
}

// linesWith are the lines of text that contain s.
func linesWith(text, s string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return out
}

// withURLPasswordsAccepted runs store with the GitProvider schema as it was
// before it refused a password in spec.url, and puts the rule back after.
func withURLPasswordsAccepted(t *testing.T, store func()) {
	t.Helper()
	ctx := context.Background()
	key := client.ObjectKey{Name: "gitproviders.configbutler.ai"}
	var original apiextensionsv1.CustomResourceDefinition
	require.NoError(t, env.kube.Client().Get(ctx, key, &original))
	setURLRules := func(keep func(apiextensionsv1.ValidationRule) bool) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var crd apiextensionsv1.CustomResourceDefinition
			if err := env.kube.Client().Get(ctx, key, &crd); err != nil {
				return err
			}
			url := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["url"]
			var rules apiextensionsv1.ValidationRules
			for _, rule := range original.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["url"].XValidations {
				if keep(rule) {
					rules = append(rules, rule)
				}
			}
			url.XValidations = rules
			crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["url"] = url
			return env.kube.Client().Update(ctx, &crd)
		})
	}
	require.NoError(t, setURLRules(func(r apiextensionsv1.ValidationRule) bool { return !strings.Contains(r.Message, "password") }))
	restore := func() { require.NoError(t, setURLRules(func(apiextensionsv1.ValidationRule) bool { return true })) }
	defer restore()
	// The API server serves the changed schema once it has seen it; until
	// then a create is refused by the rule, and tried again.
	require.Eventually(t, func() bool {
		probe := gitProvider("default", "url-rule-probe", "https://u:p@example.com/r.git")
		err := env.kube.Client().Create(ctx, probe)
		if err == nil {
			require.NoError(t, env.kube.Client().Delete(ctx, probe))
		}
		return err == nil
	}, 30*time.Second, 100*time.Millisecond, "the schema without the rule served")
	store()
}

func waitProviderReason(t *testing.T, ns, name, reason string) metav1.Condition {
	t.Helper()
	var ready *metav1.Condition
	eventually(t, "GitProvider "+name+" Ready reason "+reason, func() bool {
		var gp v1alpha3.GitProvider
		if env.kube.Client().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &gp) != nil {
			return false
		}
		ready = meta.FindStatusCondition(gp.Status.Conditions, v1alpha3.ConditionReady)
		return ready != nil && ready.Reason == reason
	})
	return *ready
}

// statusesOf is the status of every GitProvider and GitTarget in ns as
// JSON.
func statusesOf(t *testing.T, ns string) string {
	t.Helper()
	var providers v1alpha3.GitProviderList
	require.NoError(t, env.kube.Client().List(context.Background(), &providers, client.InNamespace(ns)))
	var targets v1alpha3.GitTargetList
	require.NoError(t, env.kube.Client().List(context.Background(), &targets, client.InNamespace(ns)))
	var statuses []any
	for _, p := range providers.Items {
		statuses = append(statuses, p.Status)
	}
	for _, gt := range targets.Items {
		statuses = append(statuses, gt.Status)
	}
	out, err := json.Marshal(statuses)
	require.NoError(t, err)
	return string(out)
}
