package ha

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/branch"
	"github.com/configbutler/gitops-reverser/internal/redisstore"
)

// patience bounds every wait: a crash failover takes a Lease duration
// (15 s) and a claim TTL (15 s, running alongside), on a machine that may
// be busy with other tests.
const patience = 2 * time.Minute

// spread is one repository whose branches are written by GitTargets in
// namespaces of their own, one GitTarget, GitProvider and ConfigMap
// WatchRule per namespace and branch.
type spread struct {
	repo     string
	branches []mirrored
	claims   *redisstore.Claims
	rdb      *goredis.Client
}

// mirrored is one branch and the namespace whose ConfigMaps it mirrors.
type mirrored struct {
	ns, branch, path string
	key              branch.Key
}

// newSpread creates the repository (one commit on main, so every branch
// starts from it) and n mirrored branches.
func newSpread(t testing.TB, name, redisPrefix string, n int) *spread {
	t.Helper()
	_, err := env.git.CreateRepoWithCommit(name, map[string]string{"README.md": "# " + name + "\n"})
	require.NoError(t, err)
	rdb := goredis.NewClient(&goredis.Options{Addr: env.redis.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	s := &spread{repo: name, rdb: rdb, claims: &redisstore.Claims{Client: rdb, Prefix: redisPrefix}}
	// The package's tests and benchmarks share one API server, and every
	// replica runs every GitTarget it sees: once this spread's replicas
	// are gone (their cleanup runs first), its GitTargets go too, so the
	// next spread's replicas share only the next spread's branches.
	t.Cleanup(func() {
		for _, m := range s.branches {
			target := &v1alpha3.GitTarget{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "mirror"}}
			if err := env.kube.Client().Delete(context.Background(), target); client.IgnoreNotFound(err) != nil {
				t.Errorf("deleting GitTarget %s/mirror: %v", m.ns, err)
			}
		}
	})
	for i := range n {
		m := mirrored{ns: fmt.Sprintf("%s-%d", name, i), branch: fmt.Sprintf("team-%d", i)}
		m.path = "clusters/" + m.ns
		m.key = branch.Key{ProviderNamespace: m.ns, Provider: "repo", Branch: m.branch}
		s.branches = append(s.branches, m)
		create(t,
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: m.ns}},
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "git-credentials"},
				StringData: map[string]string{"username": gitUser, "password": gitPassword}},
			&v1alpha3.GitProvider{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "repo"},
				Spec: v1alpha3.GitProviderSpec{
					URL:             env.git.HTTPURL(name),
					Forge:           &v1alpha3.ForgeSpec{Type: v1alpha3.ForgeGit},
					SecretRef:       &v1alpha3.LocalObjectReference{Name: "git-credentials"},
					AllowedBranches: []string{m.branch},
					Push:            v1alpha3.PushSpec{CommitWindow: &metav1.Duration{Duration: 300 * time.Millisecond}},
				}},
			&v1alpha3.GitTarget{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "mirror"},
				Spec: v1alpha3.GitTargetSpec{ProviderRef: v1alpha3.GitProviderReference{Name: "repo"}, Branch: m.branch, Path: m.path}},
			&v1alpha3.WatchRule{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "configmaps"},
				Spec: v1alpha3.WatchRuleSpec{TargetRef: v1alpha3.TargetReference{Name: "mirror"},
					Rules: []v1alpha3.NamespacedResourceRule{{ResourceSelector: v1alpha3.ResourceSelector{Resources: []string{"configmaps"}}}}}},
		)
	}
	return s
}

func create(t testing.TB, objs ...client.Object) {
	t.Helper()
	for _, obj := range objs {
		require.NoError(t, env.kube.Client().Create(context.Background(), obj), "creating %T %s", obj, obj.GetName())
	}
}

// setValue writes the ConfigMap "probe" of m's namespace with value, creating
// it the first time.
func setValue(t testing.TB, m mirrored, value string) {
	t.Helper()
	require.NoError(t, writeValue(m, value))
}

// writeValue is setValue for a goroutine that is not the test's.
func writeValue(m mirrored, value string) error {
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "probe"}}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		err := env.kube.Client().Get(ctx, client.ObjectKeyFromObject(cm), cm)
		if client.IgnoreNotFound(err) != nil {
			return err
		}
		cm.Data = map[string]string{"value": value}
		if err != nil {
			return env.kube.Client().Create(ctx, cm)
		}
		return env.kube.Client().Update(ctx, cm)
	})
}

// inGit reports whether m's branch holds the probe ConfigMap with value.
func (s *spread) inGit(m mirrored, value string) bool {
	content, err := env.git.ReadFile(s.repo, m.branch, m.probeFile())
	return err == nil && holdsValue(content, value)
}

// probeFile is where m's branch keeps the probe ConfigMap.
func (m mirrored) probeFile() string { return m.path + "/" + m.ns + "/configmaps/probe.yaml" }

// holdsValue reports whether a probe file's content has value.
func holdsValue(content, value string) bool { return strings.Contains(content, "value: "+value+"\n") }

// waitInGit waits until m's branch holds the probe with value.
func (s *spread) waitInGit(t testing.TB, c *cluster, m mirrored, value string) {
	t.Helper()
	require.Eventually(t, func() bool { return s.inGit(m, value) }, patience, 100*time.Millisecond,
		"value %q of %s in Git on branch %s; %s", value, m.ns, m.branch, c.logs())
}

// head is the commit m's branch points at.
func (s *spread) head(t testing.TB, m mirrored) string {
	t.Helper()
	out, err := env.git.Git(s.repo, "rev-parse", "refs/heads/"+m.branch)
	require.NoError(t, err)
	return out
}

// isAncestor reports whether commit old is an ancestor of (or is) commit new.
func (s *spread) isAncestor(old, new string) bool {
	_, err := env.git.Git(s.repo, "merge-base", "--is-ancestor", old, new)
	return err == nil
}

// holders are the claim tokens of every branch, by branch ("" when none
// holds it).
func (s *spread) holders(ctx context.Context) (map[branch.Key]string, error) {
	out := map[branch.Key]string{}
	for _, m := range s.branches {
		token, err := s.claims.Owner(ctx, m.key.String())
		if err != nil {
			return nil, err
		}
		out[m.key] = token
	}
	return out, nil
}

// identityOf is the replica a claim token names: the token is
// "<identity>-<16 hex digits>".
func identityOf(token string) string {
	if i := strings.LastIndexByte(token, '-'); i > 0 {
		return token[:i]
	}
	return ""
}

// claimEvents records the keyspace events of a spread's claim keys: "set"
// when a replica acquires a claim, "del" when its holder releases it,
// "expired" when it ran out. Their order is the sentinel that tells a
// handover from an expiry, whatever the clock says.
type claimEvents struct {
	mu    sync.Mutex
	byKey map[string][]claimEvent // by branch (Key.String())
}

// claimEvent is one keyspace event and when the test received it, for the
// failover figures the test logs (never asserted on).
type claimEvent struct {
	kind string
	at   time.Time
}

// watchClaims subscribes to the claim keys' events until the test ends.
func (s *spread) watchClaims(t testing.TB) *claimEvents {
	t.Helper()
	ctx := context.Background()
	// K: keyspace channels; g: del and expire; $: set; x: expired.
	require.NoError(t, s.rdb.ConfigSet(ctx, "notify-keyspace-events", "Kg$x").Err())
	channelPrefix := "__keyspace@0__:" + s.claims.Prefix + "claim:"
	sub := s.rdb.PSubscribe(ctx, channelPrefix+"*")
	_, err := sub.Receive(ctx) // the subscription is in place
	require.NoError(t, err)
	e := &claimEvents{byKey: map[string][]claimEvent{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for msg := range sub.Channel() {
			switch msg.Payload {
			case "set", "del", "expired":
				e.mu.Lock()
				key := strings.TrimPrefix(msg.Channel, channelPrefix)
				e.byKey[key] = append(e.byKey[key], claimEvent{kind: msg.Payload, at: time.Now()})
				e.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { _ = sub.Close(); <-done })
	return e
}

// mark is where each key's events are now, for since.
func (e *claimEvents) mark() map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]int{}
	for k, events := range e.byKey {
		out[k] = len(events)
	}
	return out
}

// since are the kinds of key's events after mark.
func (e *claimEvents) since(mark map[string]int, key branch.Key) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var kinds []string
	for _, ev := range e.byKey[key.String()][mark[key.String()]:] {
		kinds = append(kinds, ev.kind)
	}
	return kinds
}

// firstAt is when the first event of kind came for key after mark (zero
// when none did).
func (e *claimEvents) firstAt(mark map[string]int, key branch.Key, kind string) time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, ev := range e.byKey[key.String()][mark[key.String()]:] {
		if ev.kind == kind {
			return ev.at
		}
	}
	return time.Time{}
}
