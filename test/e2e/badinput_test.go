package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
)

// TestAMissingProviderIsReportedAndRecovers: a GitTarget naming a
// GitProvider that does not exist says so; creating it starts the mirror,
// and what changed meanwhile is in Git.
func TestAMissingProviderIsReportedAndRecovers(t *testing.T) {
	m := newMirror(t, "missing-provider")
	apply(t,
		&v1alpha3.GitTarget{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "orphan"},
			Spec: v1alpha3.GitTargetSpec{ProviderRef: v1alpha3.GitProviderReference{Name: "later"}, Branch: "main", Path: "orphan"}},
		watchRule(m.ns, "orphan", "orphan", "configmaps"),
	)
	startOperator(t)
	eventually(t, "GitProviderNotFound", func() bool {
		c := targetCondition(t, m.ns, "orphan", v1alpha3.ConditionReady)
		return c != nil && c.Reason == v1alpha3.ReasonGitProviderNotFound && strings.Contains(c.Message, "later")
	})
	require.Equal(t, metav1.ConditionTrue, conditionStatus(t, m.ns, "orphan", v1alpha3.ConditionStalled))
	require.Contains(t, targetCondition(t, m.ns, "orphan", v1alpha3.ConditionReady).Message, "delete this GitTarget and create it again",
		"spec.providerRef is immutable: the message offers what a user can do")

	apply(t, configMap(m.ns, "while-broken", map[string]string{"k": "v"}))
	apply(t, gitProvider(m.ns, "later", env.git.HTTPURL(m.repo)))
	eventually(t, "the ConfigMap made while broken in Git", func() bool {
		return gitFile(t, m.repo, "orphan/missing-provider/configmaps/while-broken.yaml") != ""
	})
	waitReady(t, m.ns, "orphan")
}

// TestABadCredentialIsReportedAndLosesNothingOnceFixed: the provider says
// the credentials were refused, the target waits, and fixing the Secret
// mirrors everything, including changes made while it was broken.
func TestABadCredentialIsReportedAndLosesNothingOnceFixed(t *testing.T) {
	m := newMirror(t, "bad-credential", "configmaps")
	ctx := context.Background()
	var secret corev1.Secret
	require.NoError(t, env.kube.Client().Get(ctx, client.ObjectKey{Namespace: m.ns, Name: "git-credentials"}, &secret))
	secret.Data = map[string][]byte{"username": []byte(gitUser), "password": []byte("wrong")}
	require.NoError(t, env.kube.Client().Update(ctx, &secret))
	startOperator(t)

	eventually(t, "the provider reports Unauthorized", func() bool {
		var gp v1alpha3.GitProvider
		if env.kube.Client().Get(ctx, client.ObjectKey{Namespace: m.ns, Name: "repo"}, &gp) != nil {
			return false
		}
		for _, c := range gp.Status.Conditions {
			if c.Type == v1alpha3.ConditionReady && c.Reason == v1alpha3.ReasonUnauthorized {
				return true
			}
		}
		return false
	})
	eventually(t, "the target waits for its provider", func() bool {
		c := targetCondition(t, m.ns, m.target, v1alpha3.ConditionReady)
		return c != nil && c.Reason == v1alpha3.ReasonGitProviderNotReady
	})
	apply(t, configMap(m.ns, "while-broken", map[string]string{"k": "v"}))

	require.NoError(t, env.kube.Client().Get(ctx, client.ObjectKey{Namespace: m.ns, Name: "git-credentials"}, &secret))
	secret.Data["password"] = []byte(gitPassword)
	require.NoError(t, env.kube.Client().Update(ctx, &secret))
	eventually(t, "the ConfigMap made while broken in Git", func() bool {
		return gitFile(t, m.repo, m.path+"/bad-credential/configmaps/while-broken.yaml") != ""
	})
	waitReady(t, m.ns, m.target)
}

// TestAnUnreachableRemoteIsReported: a remote nobody answers on leaves the
// provider Reconciling with RepositoryUnreachable and the target waiting
// with that reason in its message.
func TestAnUnreachableRemoteIsReported(t *testing.T) {
	m := newMirror(t, "unreachable")
	apply(t,
		gitProvider(m.ns, "nowhere", "http://127.0.0.1:9/nowhere.git"),
		&v1alpha3.GitTarget{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "nowhere"},
			Spec: v1alpha3.GitTargetSpec{ProviderRef: v1alpha3.GitProviderReference{Name: "nowhere"}, Branch: "main", Path: "x"}},
	)
	startOperator(t)
	eventually(t, "the provider reports RepositoryUnreachable", func() bool {
		var gp v1alpha3.GitProvider
		if env.kube.Client().Get(context.Background(), client.ObjectKey{Namespace: m.ns, Name: "nowhere"}, &gp) != nil {
			return false
		}
		for _, c := range gp.Status.Conditions {
			if c.Type == v1alpha3.ConditionReady && c.Reason == v1alpha3.ReasonRepositoryUnreachable {
				return true
			}
		}
		return false
	})
	eventually(t, "the target says why it waits", func() bool {
		c := targetCondition(t, m.ns, "nowhere", v1alpha3.ConditionReady)
		return c != nil && c.Reason == v1alpha3.ReasonGitProviderNotReady && strings.Contains(c.Message, "nowhere")
	})
	require.Equal(t, metav1.ConditionTrue, conditionStatus(t, m.ns, "nowhere", v1alpha3.ConditionReconciling), "it retries on its own")
}
