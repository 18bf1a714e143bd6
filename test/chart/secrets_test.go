package chart

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/operator"
)

// secretRequest is one request the operator sent about Secrets.
type secretRequest struct {
	method, path, query, accept string
}

// readsValues is true for a list or watch that returns whole Secrets (a
// metadata-only one asks for PartialObjectMetadata).
func (r secretRequest) readsValues() bool {
	return r.method == http.MethodGet && r.isCollection() && !strings.Contains(r.accept, "as=PartialObjectMetadata")
}

// isCollection is a list or a watch, as opposed to a get of one Secret.
func (r secretRequest) isCollection() bool { return strings.HasSuffix(r.path, "/secrets") }

// namespace is the namespace the request is scoped to, "" cluster-wide.
func (r secretRequest) namespace() string {
	_, rest, ok := strings.Cut(r.path, "/namespaces/")
	if !ok {
		return ""
	}
	ns, _, _ := strings.Cut(rest, "/")
	return ns
}

// secretRecorder records every request about Secrets sent through a config.
type secretRecorder struct {
	mu       sync.Mutex
	requests []secretRequest
}

func (s *secretRecorder) wrap(cfg *rest.Config) *rest.Config {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if strings.Contains(req.URL.Path, "/secrets") {
				s.mu.Lock()
				s.requests = append(s.requests, secretRequest{method: req.Method, path: req.URL.Path,
					query: req.URL.RawQuery, accept: req.Header.Get("Accept")})
				s.mu.Unlock()
			}
			return rt.RoundTrip(req)
		})
	})
	return cfg
}

func (s *secretRecorder) recorded() []secretRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]secretRequest(nil), s.requests...)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// tokenProvider is a GitProvider in namespace reading the chart Git
// server's credentials from the Secret secretName, and that Secret.
func tokenProvider(namespace, name, repo, secretName string) (*v1alpha3.GitProvider, *corev1.Secret) {
	provider := &v1alpha3.GitProvider{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: v1alpha3.GitProviderSpec{
			URL:             env.git.HTTPURL(repo),
			Forge:           &v1alpha3.ForgeSpec{Type: v1alpha3.ForgeGit},
			SecretRef:       &v1alpha3.LocalObjectReference{Name: secretName},
			AllowedBranches: []string{"main"},
			Push:            v1alpha3.PushSpec{CommitWindow: &metav1.Duration{Duration: 300 * time.Millisecond}},
		}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: secretName},
		StringData: map[string]string{"username": gitUser, "password": gitPassword}}
	return provider, secret
}

func providerConditions(t *testing.T, ns, name string) []metav1.Condition {
	t.Helper()
	var gp v1alpha3.GitProvider
	if err := env.kube.Client().Get(ctx(t), client.ObjectKey{Namespace: ns, Name: name}, &gp); err != nil {
		return nil
	}
	return gp.Status.Conditions
}

func waitProviderReady(t *testing.T, ns, name string) {
	t.Helper()
	require.Eventually(t, func() bool {
		c := meta.FindStatusCondition(providerConditions(t, ns, name), v1alpha3.ConditionReady)
		return c != nil && c.Status == metav1.ConditionTrue
	}, 60*time.Second, 200*time.Millisecond, "GitProvider %s/%s Ready; conditions: %+v", ns, name, providerConditions(t, ns, name))
}

// TestTheOperatorCachesNoSecretData runs the operator with its Secret access
// limited to one credential namespace and records every request it makes
// about Secrets while a GitProvider there becomes Ready: every list and watch
// is metadata-only and scoped to the credential namespace or the operator's
// own; the value is read with a get of the one Secret.
func TestTheOperatorCachesNoSecretData(t *testing.T) {
	const opNS, team = "cache-operator", "cache-team"
	ensureCRDs(t)
	for _, ns := range []string{opNS, team, "cache-elsewhere"} {
		ensureNamespace(t, ns)
	}
	_, err := env.git.CreateBareRepo(team)
	require.NoError(t, err)
	provider, secret := tokenProvider(team, "repo", team, "git-credentials")
	create(t, secret, provider,
		// A Secret nothing references, in a namespace the operator was not
		// given: it must not be read or watched.
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "cache-elsewhere", Name: "unrelated"},
			StringData: map[string]string{"password": "not-for-the-operator"}})

	var recorder secretRecorder
	// The flags the chart passes for this team; as the admin, since this
	// test is about what is asked, not what is granted.
	opts := operatorOptions(t, render(t, "cache", opNS, teamValues(team, "")), opNS, "unused")
	require.Equal(t, []string{opNS, team}, opts.CredentialNamespaces)
	opts.Config = recorder.wrap(env.kube.Config())
	startOperatorWith(t, opts)
	waitProviderReady(t, team, provider.Name)

	var gets, collections int
	for _, r := range recorder.recorded() {
		switch {
		case !r.isCollection():
			gets++
			require.Equal(t, team, r.namespace(), "a Secret get outside the credential namespace: %+v", r)
		default:
			collections++
			require.False(t, r.readsValues(), "a list or watch of whole Secrets: %+v", r)
			require.Contains(t, []string{team, opNS}, r.namespace(),
				"a Secret list or watch outside the credential and operator namespaces: %+v", r)
		}
	}
	require.NotZero(t, gets, "the credentials are read with a get")
	require.NotZero(t, collections, "Secret metadata is watched to notice a rotation")
}

// TestSecretsAreReadOnlyInTheCredentialNamespaces installs the chart with
// rbac.credentialNamespaces naming two namespaces and runs the operator as
// its ServiceAccount: GitProviders there become Ready, one in a third
// namespace is told which chart value to set, the ServiceAccount cannot get
// a Secret of an unrelated namespace, and the start-up check names a
// credential namespace whose Secrets it may not read.
func TestSecretsAreReadOnlyInTheCredentialNamespaces(t *testing.T) {
	const (
		release, opNS, sa           = "lp", "lp-operator", "lp-gitops-reverser"
		granted1, granted2, refused = "lp-team-a", "lp-team-b", "lp-team-c"
		unrelated                   = "lp-unrelated"
	)
	values := "rbac: {credentialNamespaces: [" + granted1 + ", " + granted2 + "]}\n"
	objs := render(t, release, opNS, values)
	for _, ns := range []string{granted1, granted2, refused, unrelated} {
		ensureNamespace(t, ns)
	}
	install(t, objs)
	create(t, localClusterProvider())
	for _, ns := range []string{granted1, granted2, refused} {
		_, err := env.git.CreateBareRepo(ns)
		require.NoError(t, err)
		provider, secret := tokenProvider(ns, "repo", ns, "git-credentials")
		create(t, secret, provider, &v1alpha3.GitTarget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mirror"},
			Spec: v1alpha3.GitTargetSpec{ProviderRef: v1alpha3.GitProviderReference{Name: "repo"}, Branch: "main", Path: "clusters/" + ns}})
	}
	create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: unrelated, Name: "database"},
		StringData: map[string]string{"password": "lp-unrelated-s3cret"}})

	t.Run("the ServiceAccount may read Secrets in the credential namespaces only", func(t *testing.T) {
		cases := []struct {
			verb, namespace string
			allowed         bool
		}{
			{"get", granted1, true}, {"list", granted1, true}, {"watch", granted2, true},
			{"get", opNS, true}, // remote kubeconfigs
			{"get", refused, false}, {"get", unrelated, false}, {"list", unrelated, false},
			{"list", "", false}, {"watch", "", false}, // cluster-wide
		}
		for _, tc := range cases {
			require.Equal(t, tc.allowed, serviceAccountMay(t, opNS, sa, tc.verb, tc.namespace),
				"%s secrets in namespace %q", tc.verb, tc.namespace)
		}
	})

	t.Run("the start-up check names a credential namespace it may not read", func(t *testing.T) {
		opts := operatorOptions(t, objs, opNS, sa)
		opts.CredentialNamespaces = append(opts.CredentialNamespaces, refused)
		runCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		err := operator.Run(runCtx, opts)
		require.ErrorContains(t, err, "get, list, watch secrets in namespace "+refused+
			" (with the chart: add "+refused+" to rbac.credentialNamespaces)")
		require.NotContains(t, err.Error(), "namespace "+granted1)
	})

	startOperator(t, objs, opNS, sa)
	waitProviderReady(t, granted1, "repo")
	waitProviderReady(t, granted2, "repo")
	require.Eventually(t, func() bool {
		c := meta.FindStatusCondition(targetConditions(t, granted1, "mirror"), v1alpha3.ConditionReady)
		return c != nil && c.Status == metav1.ConditionTrue
	}, 60*time.Second, 200*time.Millisecond, "a GitTarget in a credential namespace Ready; conditions: %+v",
		targetConditions(t, granted1, "mirror"))

	t.Run("a GitProvider outside them is told which value to set", func(t *testing.T) {
		notGranted := waitProviderReason(t, refused, "repo", v1alpha3.ConditionReady, v1alpha3.ReasonSecretNamespaceNotGranted)
		require.Equal(t, metav1.ConditionFalse, notGranted.Status)
		require.Contains(t, notGranted.Message, "namespace "+refused)
		require.Contains(t, notGranted.Message, "add "+refused+" to rbac.credentialNamespaces")
		stalled := meta.FindStatusCondition(providerConditions(t, refused, "repo"), v1alpha3.ConditionStalled)
		require.Equal(t, metav1.ConditionTrue, stalled.Status, "only a grant helps")

		var validated *metav1.Condition
		require.Eventually(t, func() bool {
			validated = meta.FindStatusCondition(targetConditions(t, refused, "mirror"), v1alpha3.ConditionValidated)
			return validated != nil && validated.Reason == v1alpha3.ReasonSecretNamespaceNotGranted
		}, 60*time.Second, 200*time.Millisecond, "the GitTarget there too; conditions: %+v", targetConditions(t, refused, "mirror"))
		require.Equal(t, metav1.ConditionFalse, validated.Status)
		require.Contains(t, validated.Message, "add "+refused+" to rbac.credentialNamespaces")

		// A provider without credentials and a target without an age key
		// read no Secret there: they are not refused for it (the Git
		// server then wants credentials).
		public := &v1alpha3.GitProvider{ObjectMeta: metav1.ObjectMeta{Namespace: refused, Name: "public"},
			Spec: v1alpha3.GitProviderSpec{URL: env.git.HTTPURL(refused), Forge: &v1alpha3.ForgeSpec{Type: v1alpha3.ForgeGit},
				AllowedBranches: []string{"main"}}}
		create(t, public, &v1alpha3.GitTarget{ObjectMeta: metav1.ObjectMeta{Namespace: refused, Name: "public"},
			Spec: v1alpha3.GitTargetSpec{ProviderRef: v1alpha3.GitProviderReference{Name: "public"}, Branch: "main", Path: "clusters/public"}})
		waitProviderReason(t, refused, "public", v1alpha3.ConditionReady, v1alpha3.ReasonUnauthorized)
		require.Eventually(t, func() bool {
			c := meta.FindStatusCondition(targetConditions(t, refused, "public"), v1alpha3.ConditionGitPathAccepted)
			return c != nil && c.Reason == v1alpha3.ReasonGitProviderNotReady
		}, 60*time.Second, 200*time.Millisecond, "the target without Secrets waits for its provider instead")
		require.Equal(t, metav1.ConditionTrue,
			meta.FindStatusCondition(targetConditions(t, refused, "public"), v1alpha3.ConditionValidated).Status)
	})

	t.Run("a read RBAC refuses names the namespace too", func(t *testing.T) {
		// The grant of one namespace goes away under the running operator
		// (a hand-edited RoleBinding); the provider's next reconcile (a spec
		// change) is refused the Secret.
		binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: granted2, Name: release + "-gitops-reverser-secrets"}}
		require.NoError(t, env.kube.Client().Delete(ctx(t), binding))
		require.Eventually(t, func() bool { return !serviceAccountMay(t, opNS, sa, "get", granted2) },
			30*time.Second, 100*time.Millisecond, "the RoleBinding's removal in effect")
		updateProvider(t, granted2, "repo", func(p *v1alpha3.GitProvider) {
			p.Spec.AllowedBranches = append(p.Spec.AllowedBranches, "next")
		})
		refusedRead := waitProviderReason(t, granted2, "repo", v1alpha3.ConditionReady, v1alpha3.ReasonSecretNamespaceNotGranted)
		require.Contains(t, refusedRead.Message, "may not read Secrets in namespace "+granted2)
		require.Contains(t, refusedRead.Message, "rbac.credentialNamespaces")
		require.Contains(t, refusedRead.Message, "forbidden", "the API server's answer is quoted")
	})
}

// serviceAccountMay asks, with a SelfSubjectAccessReview made as the
// ServiceAccount, whether it may verb Secrets in namespace ("" cluster-wide).
func serviceAccountMay(t *testing.T, saNamespace, sa, verb, namespace string) bool {
	t.Helper()
	clientset, err := kubernetes.NewForConfig(env.kube.ConfigAsServiceAccount(saNamespace, sa))
	require.NoError(t, err)
	review, err := clientset.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx(t), &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: verb, Resource: "secrets", Namespace: namespace}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	return review.Status.Allowed
}

// waitProviderReason waits until the provider's condition has reason and
// returns it.
func waitProviderReason(t *testing.T, ns, name, conditionType, reason string) *metav1.Condition {
	t.Helper()
	var c *metav1.Condition
	require.Eventually(t, func() bool {
		c = meta.FindStatusCondition(providerConditions(t, ns, name), conditionType)
		return c != nil && c.Reason == reason
	}, 60*time.Second, 200*time.Millisecond, "GitProvider %s/%s %s reason %s; conditions: %+v",
		ns, name, conditionType, reason, providerConditions(t, ns, name))
	return c
}

// updateProvider edits the provider's spec, reading it again on a conflict
// with the operator's status writes.
func updateProvider(t *testing.T, ns, name string, edit func(*v1alpha3.GitProvider)) {
	t.Helper()
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var p v1alpha3.GitProvider
		if err := env.kube.Client().Get(ctx(t), client.ObjectKey{Namespace: ns, Name: name}, &p); err != nil {
			return err
		}
		edit(&p)
		return env.kube.Client().Update(ctx(t), &p)
	}))
}
