package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Scenario J's workload (issue 23): interleaved authors.
const (
	interleavedObjects = 30
	// interleavedWrites is each actor's number of writes, round robin over
	// the objects.
	interleavedWrites = 300
	// interleavedCatchUpTarget is the bound, in seconds, on how far
	// Git may be behind the last write (go-git forge).
	interleavedCatchUpTarget = 10
	// interleavedAnnotation carries each write's value: "<actor>-<n>".
	interleavedAnnotation = "edit"
)

var interleavedActors = []string{"alice", "bob", "carol"}

// BenchmarkInterleavedAuthors is scenario J: three impersonated people
// write at once, each interleavedWrites merge patches round robin over the
// same interleavedObjects ServiceAccounts, as fast as the API server
// takes them, with audit attribution on. Every change of another author
// closes the open window, so the branch has many small windows ready at
// once. Measured: how long after the last write Git holds the cluster's
// state, the commits that took, and, on the forges read through git
// (git, Gitea), whether every commit carries only its author's values.
func BenchmarkInterleavedAuthors(b *testing.B) {
	forEachForgeOf(b, []forgeKind{forgeGit, forgeGitHub, forgeGitea}, interleavedAuthors)
}

func interleavedAuthors(b *testing.B, fk forgeKind) {
	e := sharedEnv(b)
	if e.profileDir != "" {
		b.Skip("the profiled build runs configured-author mode only")
	}
	ctx := context.Background()
	r := newReporter(b, "J interleaved authors", fk)
	name := uniqueName("interleaved")
	m, err := newMirror(ctx, e, name, mirrorOptions{forge: fk, resource: auditedResource})
	require.NoError(b, err)
	b.Cleanup(func() { require.NoError(b, m.retire(ctx, e)) })
	for i := range interleavedObjects {
		require.NoError(b, e.client().Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{
			Namespace: name, Name: interleavedObject(i), Annotations: map[string]string{interleavedAnnotation: "initial"}}}))
	}
	op, err := startOperatorArgs(e, name, e.audit.operatorArgs()...)
	require.NoError(b, err)
	defer stopOperator(b, op)
	_, err = pollHeads(ctx, m.remote, op, 100*time.Millisecond, 2*time.Minute, func(ctx context.Context, head string) (bool, error) {
		n, err := m.remote.filesContaining(ctx, head, interleavedAnnotation+": initial")
		return n == interleavedObjects, err
	})
	require.NoError(b, err, "waiting for the ServiceAccounts in Git")
	require.NoError(b, waitReady(ctx, e, m, op, time.Minute))
	base, err := m.remote.head(ctx)
	require.NoError(b, err)
	commitsBefore, err := m.remote.commitCount(ctx)
	require.NoError(b, err)
	usageBefore, err := op.usage()
	require.NoError(b, err)
	loadBefore, err := loadAverage()
	require.NoError(b, err)

	start := time.Now()
	lastWrite := writeInterleaved(b, e, name)
	final := finalValues(b, e, name)
	seen, err := pollHeads(ctx, m.remote, op, 100*time.Millisecond, 15*time.Minute, func(ctx context.Context, head string) (bool, error) {
		for obj, value := range final {
			content, err := m.remote.show(ctx, head, name+"/serviceaccounts/"+obj+".yaml")
			if err != nil || !strings.Contains(content, interleavedAnnotation+": "+value+"\n") {
				return false, nil //nolint:nilerr // not there yet
			}
		}
		return true, nil
	})
	require.NoError(b, err, "waiting for the last writes in Git")
	loadAfter, err := loadAverage()
	require.NoError(b, err)
	usageAfter, err := op.usage()
	require.NoError(b, err)
	commitsAfter, err := m.remote.commitCount(ctx)
	require.NoError(b, err)

	commits := commitsAfter - commitsBefore
	behind := seen.Sub(lastWrite).Seconds()
	r.info("writes", float64(len(interleavedActors)*interleavedWrites), "")
	r.info("writing took", lastWrite.Sub(start).Seconds(), "s")
	r.info("commits", float64(commits), "")
	r.info("commits per second until Git caught up", float64(commits)/seen.Sub(start).Seconds(), "")
	if fk == forgeGit {
		r.atMost("Git behind the last write", behind, "s", interleavedCatchUpTarget)
	} else {
		r.info("Git behind the last write", behind, "s")
	}
	r.info("operator CPU, writes to caught up", usageAfter.CPUSeconds-usageBefore.CPUSeconds, "s")
	r.info("load average (1 min), highest seen", max(loadBefore, loadAfter), "")
	if bare, ok := m.remote.(bareRemote); ok {
		wrong, unresolved, err := bare.misauthoredCommits(ctx, base)
		require.NoError(b, err)
		r.atMost("commits carrying another person's write", float64(wrong), "", 0)
		r.info("commits with the unresolved author", float64(unresolved), "")
	}
}

func interleavedObject(i int) string { return fmt.Sprintf("sa-%02d", i) }

// writeInterleaved runs the three actors' writes at once and returns when
// the last was answered.
func writeInterleaved(b *testing.B, e *benchEnv, ns string) time.Time {
	b.Helper()
	ctx := context.Background()
	var mu sync.Mutex
	var last time.Time
	err := inParallel(ctx, len(interleavedActors), len(interleavedActors), func(ctx context.Context, a int) error {
		actor := interleavedActors[a]
		c, err := e.kube.ClientAs(actor, "system:masters")
		if err != nil {
			return err
		}
		for i := range interleavedWrites {
			patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
				interleavedAnnotation: fmt.Sprintf("%s-%03d", actor, i)}}})
			if err != nil {
				return err
			}
			sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: interleavedObject(i % interleavedObjects)}}
			if err := c.Patch(ctx, sa, client.RawPatch(types.MergePatchType, patch)); err != nil {
				return fmt.Errorf("%s's write %d: %w", actor, i, err)
			}
		}
		mu.Lock()
		if now := time.Now(); now.After(last) {
			last = now
		}
		mu.Unlock()
		return nil
	})
	require.NoError(b, err)
	return last
}

// finalValues reads each object's value once every write is in.
func finalValues(b *testing.B, e *benchEnv, ns string) map[string]string {
	b.Helper()
	final := make(map[string]string, interleavedObjects)
	for i := range interleavedObjects {
		var sa corev1.ServiceAccount
		require.NoError(b, e.client().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: interleavedObject(i)}, &sa))
		final[sa.Name] = sa.Annotations[interleavedAnnotation]
	}
	return final
}

// misauthoredCommits reads every commit on main after base and counts
// those that carry a value written by someone other than their author
// (an unresolved author is no one's, so never wrong), and those authored
// unresolved.
func (r bareRemote) misauthoredCommits(ctx context.Context, base string) (wrong, unresolved int, err error) {
	out, _, err := r.git(ctx, nil, "log", "-p", "-U0", "--format=commit %an", base+".."+branchRef, "--", r.path)
	if err != nil {
		return 0, 0, err
	}
	author, carriesOther := "", false
	flush := func() {
		if carriesOther {
			wrong++
		}
	}
	for line := range strings.SplitSeq(out, "\n") {
		if rest, ok := strings.CutPrefix(line, "commit "); ok {
			flush()
			author, carriesOther = rest, false
			if strings.Contains(author, "unresolved") {
				unresolved++
			}
			continue
		}
		_, value, ok := strings.Cut(line, "+    "+interleavedAnnotation+": ")
		if !ok || !strings.HasPrefix(line, "+") {
			continue
		}
		if !strings.HasPrefix(value, author+"-") && !strings.Contains(author, "unresolved") {
			carriesOther = true
		}
	}
	flush()
	return wrong, unresolved, nil
}
