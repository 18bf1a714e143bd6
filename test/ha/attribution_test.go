package ha

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/branch"
	"github.com/configbutler/gitops-reverser/internal/redisstore"
	"github.com/configbutler/gitops-reverser/test/harness"
)

const (
	// attrGrace is how long a live change waits for its audit fact: long
	// enough for a batch that met a stopping replica to be posted again
	// (auditInitialBackoff) through the balancer to another.
	attrGrace = 15 * time.Second
	// unresolvedAuthor is the sentinel author of a change no fact named.
	unresolvedAuthor = "unknown (attribution unresolved)"
	// committerName authors replays (no actor): the operator.
	committerName = "GitOps Reverser"
	// killWindow is the commit window of the branch the kill step writes:
	// its last window is still open when the owner is killed, a moment
	// after that window's last write was journaled.
	killWindow = 10 * time.Second
	// runs of runLength changes each, the actors taking turns: 50 changes.
	runs, runLength = 10, 5
	// loadObjects are the ConfigMaps per branch the rolling restart's load
	// writes.
	loadObjects = 4
)

// actorClient is a client authenticating as name with its own credentials
// (no impersonation): the API server's audit events name name itself.
type actorClient struct {
	name string
	c    client.Client
}

// attr is the state the attribution steps share.
type attr struct {
	s       *spread
	c       *cluster
	members []string
	actors  [2]actorClient
	// gate stands between the first branch's GitProvider and the Git
	// server, so the kill step can keep its owner from committing.
	gate *redisProxy
}

// TestAttributedChangesSurviveAKillAndARollingRestart runs three replicas
// with audit attribution on: the API server's audit webhook posts, through
// a round-robin balancer, to every replica's ingress; the facts reach the
// branch owners through Redis. Two actors with their own credentials (a
// client-certificate user and a ServiceAccount token) write; the steps
// kill a branch owner with its changes accepted but not committed, then
// restart every replica in turn under load.
func TestAttributedChangesSurviveAKillAndARollingRestart(t *testing.T) {
	prefix := attrName + ":"
	a := &attr{s: newSpread(t, attrName, prefix, attrBranches), members: []string{"op-0", "op-1", "op-2"}}
	gitURL, err := url.Parse(env.git.HTTPURL(attrName))
	require.NoError(t, err)
	// The proxy forwards any TCP; here it stands before the Git server.
	a.gate = startRedisProxy(t, gitURL.Host)
	a.gateFirstBranch(t)
	a.actors = newActors(t)
	// The objects exist before the replicas start: their first commit is
	// the start's replay, authored by the operator.
	for i, m := range a.s.branches {
		for j := range loadObjects {
			create(t, namedConfigMap(m.ns, fmt.Sprintf("load-%d", j), "v0"))
		}
		if i == 0 {
			for j := range runLength {
				create(t, namedConfigMap(m.ns, fmt.Sprintf("item-%d", j), "v0"))
			}
		}
	}
	a.c = newCluster(t, attrName+"-system", prefix, len(a.members))
	ingress := map[string]string{}
	var backends []string
	for _, id := range a.members {
		port, err := harness.FreePort()
		require.NoError(t, err)
		ingress[id] = fmt.Sprintf("127.0.0.1:%d", port)
		backends = append(backends, ingress[id])
	}
	a.c.args = func(id string) []string { return env.audit.operatorArgs(ingress[id], attrGrace) }
	env.audit.balancer.setBackends(backends)
	t.Cleanup(func() { env.audit.balancer.setBackends(nil) })
	for _, id := range a.members {
		a.c.start(t, id)
	}
	waitSettled(t, a.c, a.s, a.members)
	for _, m := range a.s.branches {
		for j := range loadObjects {
			a.waitValue(t, m, fmt.Sprintf("load-%d", j), "v0")
		}
	}
	for _, step := range []struct {
		name string
		run  func(t *testing.T)
	}{
		{"a killed owner's journaled windows are committed with their actors", a.killWithAnOpenWindow},
		{"a rolling restart under load commits every change attributed", a.rollingRestartUnderLoad},
	} {
		if !t.Run(step.name, step.run) {
			return
		}
	}
	t.Logf("audit connections forwarded by the balancer, by replica ingress: %v", env.audit.balancer.forwarded())
}

// gateFirstBranch points the first branch's GitProvider at the Git server
// through the gate, and gives it killWindow, before any replica starts:
// its URL is immutable, so it is made again.
func (a *attr) gateFirstBranch(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	m := a.s.branches[0]
	var provider v1alpha3.GitProvider
	key := client.ObjectKey{Namespace: m.ns, Name: "repo"}
	require.NoError(t, env.kube.Client().Get(ctx, key, &provider))
	require.NoError(t, env.kube.Client().Delete(ctx, &provider))
	require.Eventually(t, func() bool {
		return apierrors.IsNotFound(env.kube.Client().Get(ctx, key, &v1alpha3.GitProvider{}))
	}, patience, 50*time.Millisecond, "GitProvider %s deleted", key)
	u, err := url.Parse(provider.Spec.URL)
	require.NoError(t, err)
	u.Host = a.gate.Addr()
	gated := &v1alpha3.GitProvider{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "repo"}, Spec: provider.Spec}
	gated.Spec.URL = u.String()
	gated.Spec.Push.CommitWindow = &metav1.Duration{Duration: killWindow}
	create(t, gated)
}

// newActors are a user authenticated by a client certificate and a
// ServiceAccount authenticated by a TokenRequest token, each allowed to
// write ConfigMaps everywhere.
func newActors(t *testing.T) [2]actorClient {
	t.Helper()
	ctx := context.Background()
	const ns, sa = attrName + "-actors", "robot"
	create(t,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: ns + "-configmaps"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"},
				Verbs: []string{"get", "create", "update", "patch"}}}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: ns + "-configmaps"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ns + "-configmaps"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa}}},
	)
	token, err := env.kube.ServiceAccountToken(ctx, ns, sa)
	require.NoError(t, err)
	byCertificate, err := env.kube.ConfigAsCertificateUser("alice", "system:masters")
	require.NoError(t, err)
	out := [2]actorClient{{name: "alice"}, {name: "system:serviceaccount:" + ns + ":" + sa}}
	for i, cfg := range []*rest.Config{byCertificate, env.kube.ConfigWithToken(token)} {
		// client-go's default 5 requests/s would throttle the load below
		// its rate.
		cfg.QPS, cfg.Burst = 100, 100
		out[i].c, err = client.New(cfg, client.Options{Scheme: env.kube.Scheme()})
		require.NoError(t, err)
	}
	return out
}

func namedConfigMap(ns, name, value string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"value": value}}
}

// write sets the ConfigMap ns/name's value as the actor (a merge patch).
func (ac actorClient) write(ctx context.Context, ns, name, value string) error {
	patch, err := json.Marshal(map[string]any{"data": map[string]string{"value": value}})
	if err != nil {
		return fmt.Errorf("encoding the patch: %w", err)
	}
	if err := ac.c.Patch(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}},
		client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("%s writing %s/%s: %w", ac.name, ns, name, err)
	}
	return nil
}

// file is the path of m's ConfigMap name in Git.
func file(m mirrored, name string) string {
	return m.path + "/" + m.ns + "/configmaps/" + name + ".yaml"
}

// valueAt is the value of m's ConfigMap name at rev ("" when absent).
func (a *attr) valueAt(m mirrored, rev, name string) string {
	content, err := env.git.ReadFile(a.s.repo, rev, file(m, name))
	if err != nil {
		return ""
	}
	return yamlValue([]byte(content))
}

// waitValue waits until m's branch holds value for its ConfigMap name.
func (a *attr) waitValue(t *testing.T, m mirrored, name, value string) {
	t.Helper()
	require.Eventually(t, func() bool { return a.valueAt(m, m.branch, name) == value }, patience, 100*time.Millisecond,
		"%s/%s = %q in Git on %s; %s", m.ns, name, value, m.branch, a.c.logs())
}

// journaled are the attributed writes in m's journal (a replay's name no
// author), in order, as "name=value by author".
func (a *attr) journaled(ctx context.Context, m mirrored) ([]string, error) {
	entries, err := (&redisstore.Journal{Client: a.s.rdb, Prefix: a.s.claims.Prefix}).Read(ctx, m.key.String())
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		rec, err := branch.JournalCodec{}.Decode(e.Data)
		if err != nil {
			return nil, fmt.Errorf("journal entry %s: %w", e.ID, err)
		}
		if w, ok := rec.Event.(branch.WriteEvent); ok && w.Author.Name != "" {
			out = append(out, fmt.Sprintf("%s=%s by %s", w.Write.ID.Name, yamlValue(w.Write.YAML), w.Author.Name))
		}
	}
	return out, nil
}

func yamlValue(doc []byte) string {
	for _, line := range strings.Split(string(doc), "\n") {
		if v, ok := strings.CutPrefix(line, "  value: "); ok {
			return strings.Trim(v, `"`)
		}
	}
	return ""
}
