package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
)

const (
	concurrentActors  = 3
	updatesPerActor   = 100
	sharedConfigMaps  = 30
	concurrencyWindow = 100 * time.Millisecond
)

// writtenVersion is one successful update: who wrote which value, and the
// version it produced.
type writtenVersion struct {
	actor, configMap string
	rv               int64
}

// interleavedUpdates has each actor update the shared ConfigMaps in its
// own order (actor a starts at the a*10th), each update writing a value
// unique in the test: actor-1 by merge patches (the API server retries
// them on a conflict), the others by PUTs retried on a conflict; it
// returns every value written and by whom.
func interleavedUpdates(t *testing.T, ns string, names []string) map[string]writtenVersion {
	t.Helper()
	ctx := context.Background()
	var mu sync.Mutex
	written := map[string]writtenVersion{}
	var wg sync.WaitGroup
	errs := make(chan error, concurrentActors)
	for a := 0; a < concurrentActors; a++ {
		user := fmt.Sprintf("actor-%d", a)
		c := actor(t, user, nil)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < updatesPerActor; i++ {
				name := names[(a*10+i*(a+1))%len(names)]
				value := fmt.Sprintf("%s-%d", user, i)
				write := updateValue
				if a == 1 {
					write = patchValue
				}
				rv, err := write(ctx, c, ns, name, value)
				if err != nil {
					errs <- fmt.Errorf("%s updating %s: %w", user, name, err)
					return
				}
				mu.Lock()
				written[value] = writtenVersion{actor: user, configMap: name, rv: rv}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	return written
}

// patchValue sets data.v by a merge patch, which carries no version: the
// API server applies it to what it holds, and on a conflict with another
// writer applies it again (and reviews it again) itself. It returns the
// version the patch produced.
func patchValue(ctx context.Context, c client.Client, ns, name, value string) (int64, error) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	patch := fmt.Sprintf(`{"data":{"v":%q}}`, value)
	if err := c.Patch(ctx, cm, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return 0, err
	}
	return strconv.ParseInt(cm.ResourceVersion, 10, 64)
}

// updateValue sets data.v, re-reading on a conflict; it returns the
// version the update produced.
func updateValue(ctx context.Context, c client.Client, ns, name, value string) (int64, error) {
	for {
		var cm corev1.ConfigMap
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &cm); err != nil {
			return 0, err
		}
		cm.Data = map[string]string{"v": value}
		err := c.Update(ctx, &cm)
		if apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			return 0, err
		}
		return strconv.ParseInt(cm.ResourceVersion, 10, 64)
	}
}

// TestConcurrentActorsAreNeverMisattributed: three actors interleave 100
// updates each over 30 shared ConfigMaps, under a 100 ms commit window and
// a 10 s grace. Every file every commit changed holds a value its author
// wrote.
func TestConcurrentActorsAreNeverMisattributed(t *testing.T) {
	m := newMirror(t, "attr-concurrency", "configmaps")
	provider := v1alpha3.GitProvider{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "repo"}}
	edit(t, &provider, func() { provider.Spec.Push.CommitWindow = &metav1.Duration{Duration: concurrencyWindow} })
	names := make([]string, sharedConfigMaps)
	for i := range names {
		names[i] = fmt.Sprintf("shared-%02d", i)
		apply(t, configMap(m.ns, names[i], map[string]string{"v": "initial"}))
	}
	startOperatorWith(t, withAttribution(10*time.Second))
	waitReady(t, m.ns, m.target)
	dir := m.path + "/attr-concurrency/configmaps/"
	eventually(t, "the initial ConfigMaps in Git", func() bool {
		for _, name := range names {
			if gitFile(t, m.repo, dir+name+".yaml") == "" {
				return false
			}
		}
		return true
	})
	replayed := head(t, m.repo)

	started := time.Now()
	written := interleavedUpdates(t, m.ns, names)
	finalValue := lastValues(written)
	require.Eventually(t, func() bool {
		for name, value := range finalValue {
			if !containsLine(gitFile(t, m.repo, dir+name+".yaml"), "  v: "+value) {
				return false
			}
		}
		return true
	}, 60*time.Second, 200*time.Millisecond, "every ConfigMap's last value in Git")
	t.Logf("%d updates (%d distinct values) over %d ConfigMaps committed in %s",
		concurrentActors*updatesPerActor, len(written), len(finalValue), time.Since(started))

	commits, unresolved, checked := checkAuthorsOfValues(t, m.repo, replayed, written)
	t.Logf("%d commits, %d files checked, 0 misattributed, %d unresolved commits", commits, checked, unresolved)
	require.Zero(t, unresolved, "every update was audited within the grace")
}

// lastValues is each ConfigMap's value of the highest version written.
func lastValues(written map[string]writtenVersion) map[string]string {
	final := map[string]writtenVersion{}
	values := map[string]string{}
	for value, w := range written {
		if w.rv > final[w.configMap].rv {
			final[w.configMap], values[w.configMap] = w, value
		}
	}
	return values
}

// checkAuthorsOfValues requires every file each commit after base added or
// changed to hold a value written by that commit's author, unless the
// commit is unresolved; it counts the commits, the unresolved ones and the
// files checked.
func checkAuthorsOfValues(t *testing.T, repo, base string, written map[string]writtenVersion) (commits, unresolved, checked int) {
	t.Helper()
	for _, sha := range commitsSince(t, repo, base) {
		commits++
		author := commitAuthor(t, repo, sha)
		if author == unresolvedAuthor {
			unresolved++
			continue
		}
		for _, path := range changedFiles(t, repo, sha) {
			value := valueAt(t, repo, sha, path)
			w, ok := written[value]
			require.True(t, ok, "commit %s: %s holds %q, which no actor wrote", sha, path, value)
			require.Equal(t, gitAuthor(w.actor), author, "commit %s: %s holds %q, written by %s", sha, path, value, w.actor)
			checked++
		}
	}
	return commits, unresolved, checked
}

// commitsSince are the commits on main after base, oldest first.
func commitsSince(t *testing.T, repo, base string) []string {
	t.Helper()
	out, err := env.git.Git(repo, "rev-list", "--reverse", base+"..main")
	require.NoError(t, err)
	return strings.Fields(out)
}

// changedFiles are the files a commit added or modified.
func changedFiles(t *testing.T, repo, sha string) []string {
	t.Helper()
	out, err := env.git.Git(repo, "diff-tree", "--no-commit-id", "-r", "--name-only", "--diff-filter=AM", sha)
	require.NoError(t, err)
	return strings.Fields(out)
}

// valueAt is data.v of the ConfigMap file path at commit sha.
func valueAt(t *testing.T, repo, sha, path string) string {
	t.Helper()
	content, err := env.git.ReadFile(repo, sha, path)
	require.NoError(t, err)
	var cm struct {
		Data map[string]string `json:"data"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(content), &cm), "commit %s: %s", sha, path)
	return cm.Data["v"]
}
