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
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/attribution"
	"github.com/configbutler/gitops-reverser/test/harness"
)

// Scenario I's coverage figures (issue 22).
const (
	// coverageCycles is how many times each actor runs the cycle of
	// coverageOps in one run (one new ConfigMap per cycle).
	coverageCycles = 8
	// coverageRuns is how many operator runs the workload repeats in.
	coverageRuns = 3
	// coverageMissTarget is the bound on the writes not attributed
	// to their actor, in percent (at least 95 % attributed).
	coverageMissTarget = 5
	// lastAppliedAnnotation is where kubectl's client-side apply keeps
	// what it applied.
	lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"
)

// coverageActors are the impersonated people of the workload.
var coverageActors = []string{"alice", "bob", "carol"}

// coverageOps is one cycle of an actor's writes, in order, as the tools
// people use send them: kubectl apply creating and then changing a
// ConfigMap, kubectl edit/replace (a PUT), kubectl patch (a merge patch),
// helm 4 (a server-side apply), kubectl scale (the /scale subresource of
// the actor's Deployment) and kubectl delete.
var coverageOps = []string{"apply (create)", "edit (PUT)", "merge patch", "apply (patch)", "server-side apply (helm)",
	"scale", "delete"}

// coverageWrite is one write of the workload and where it must show in
// Git: the file, and the text the write put there (empty for a delete,
// which shows as the file's removal).
type coverageWrite struct {
	actor, op, file, marker string
}

// BenchmarkObserverCoverage is scenario I, attribution coverage: three
// impersonated actors write concurrently, each its own ConfigMaps and
// Deployment, cycling through coverageOps; every write waits until it is
// in Git before the actor's next (so none is merged into another of the
// same actor), and the actors' writes interleave in the same commit
// windows. The operator attributes from the admission observer alone (the
// API server sends no audit events for these types). Afterwards, for each
// write, the commit that brought its change into Git is found and its
// author compared with the actor. The run repeats coverageRuns times,
// each with an operator run of its own.
func BenchmarkObserverCoverage(b *testing.B) {
	observerCoverage(b, "I observer: coverage", "observed-actors")
}

// BenchmarkObserverCoverageRedis is the same with the facts carried
// through a real redis-server: every change waits at the barrier for the
// reviews published before it instead of taking them from the observer's
// own filing.
func BenchmarkObserverCoverageRedis(b *testing.B) {
	redis, err := harness.StartRedis(b.TempDir())
	require.NoError(b, err)
	b.Cleanup(redis.Stop)
	observerCoverage(b, "I observer: coverage, Redis transport", "observed-actors-redis",
		"--redis-addr="+redis.Addr(), "--redis-key-prefix="+uniqueName("coverage-facts")+":")
}

// observerCoverage runs the coverage workload on a mirror of its own,
// every operator run with extra arguments.
func observerCoverage(b *testing.B, title, name string, extra ...string) {
	e := observerEnv(b)
	ctx := context.Background()
	r := newReporter(b, title, forgeGit)
	name = uniqueName(name)
	m, err := newMirror(ctx, e, name, mirrorOptions{commitWindow: latencyCommitWindow})
	require.NoError(b, err)
	b.Cleanup(func() {
		require.NoError(b, e.client().DeleteAllOf(ctx, &appsv1.Deployment{}, client.InNamespace(name)))
		require.NoError(b, m.retire(ctx, e))
	})
	require.NoError(b, e.client().Create(ctx, &v1alpha3.WatchRule{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "deployments"},
		Spec: v1alpha3.WatchRuleSpec{TargetRef: v1alpha3.TargetReference{Name: m.target}, Rules: []v1alpha3.NamespacedResourceRule{{
			ResourceSelector: v1alpha3.ResourceSelector{APIGroups: []string{"apps"}, Resources: []string{"deployments"}}}}}}))
	clients := map[string]client.Client{}
	for _, actor := range coverageActors {
		clients[actor], err = e.kube.ClientAs(actor, "system:masters")
		require.NoError(b, err)
		require.NoError(b, e.client().Create(ctx, coverageDeployment(name, actor)))
	}
	probe := client.ObjectKey{Namespace: name, Name: "probe"}
	require.NoError(b, e.client().Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: probe.Name}}))

	var attributed, unresolved, wrong, loads []float64
	byOp := map[string]*coverageTally{}
	for run := range coverageRuns {
		loadBefore, err := loadAverage()
		require.NoError(b, err)
		writes := runCoverage(b, e, m, clients, probe, fmt.Sprintf("%s-run-%d", name, run), run, extra...)
		loadAfter, err := loadAverage()
		require.NoError(b, err)
		loads = append(loads, loadBefore, loadAfter)
		tally := tallyCoverage(b, m, writes, byOp)
		n := float64(len(writes))
		attributed = append(attributed, 100*float64(tally.right)/n)
		unresolved = append(unresolved, float64(tally.unresolved))
		wrong = append(wrong, float64(tally.wrong))
		b.Logf("run %d: %d writes, %d attributed to their actor, %d unresolved, %d to someone else, %d not found in Git",
			run, len(writes), tally.right, tally.unresolved, tally.wrong, tally.missing)
	}
	misses := make([]float64, len(attributed))
	for i, a := range attributed {
		misses[i] = 100 - a
	}
	r.info("writes per run", float64(len(coverageActors)*coverageCycles*len(coverageOps)), "")
	r.reportSpread("writes not attributed to their actor", misses, "%", coverageMissTarget)
	r.reportSpread("writes committed unresolved", unresolved, "", 0)
	r.atMost("writes attributed to someone else (all runs)", sumOf(wrong), "", 0)
	for _, op := range coverageOps {
		t := byOp[op]
		r.info(op+": writes not attributed to their actor (all runs)", float64(t.unresolved+t.wrong+t.missing), "")
		b.Logf("%-26s %d attributed, %d unresolved, %d to someone else, %d not found (all runs)", op, t.right, t.unresolved, t.wrong, t.missing)
	}
	r.info("load average (1 min), highest seen", spreadOf(loads).max, "")
	r.info("load average (1 min), lowest seen", spreadOf(loads).min, "")
}

// coverageDeployment is actor's Deployment, one replica to start with.
func coverageDeployment(namespace, actor string) *appsv1.Deployment {
	labels := map[string]string{"app": actor}
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: actor + "-web"}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}}}}}
}

// runCoverage starts an operator run with the observer, runs the three
// actors' workload and returns every write made.
func runCoverage(b *testing.B, e *benchEnv, m *mirror, clients map[string]client.Client, probe client.ObjectKey,
	run string, runIndex int, extra ...string) []coverageWrite {
	b.Helper()
	ctx := context.Background()
	probes := 0
	probeWrite := func(ctx context.Context) error {
		probes++
		return patchValue(ctx, e.client(), probe, fmt.Sprintf("probe-%d-of-%s", probes, run))
	}
	observedOp := startObservedRun(b, e, m, run, true, probeWrite, extra...)
	defer observedOp.stop(b, e)
	op := observedOp.op
	require.NoError(b, waitReady(ctx, e, m, op, time.Minute))
	observedOp.waitReviews(b, e, "configmaps", "deployments", "deployments/scale")
	metricsBefore, err := op.scrape(ctx)
	require.NoError(b, err)
	defer func() {
		metricsAfter, err := op.scrape(ctx)
		require.NoError(b, err)
		b.Logf("run %s: %s", run, waitsByTier(metricsBefore, metricsAfter))
	}()

	var mu sync.Mutex
	var writes []coverageWrite
	err = inParallel(ctx, len(coverageActors), len(coverageActors), func(ctx context.Context, i int) error {
		actor := coverageActors[i]
		w := coverageWriter{m: m, c: clients[actor], actor: actor, op: op, run: runIndex}
		for cycle := range coverageCycles {
			for _, kind := range coverageOps {
				write, err := w.write(ctx, kind, cycle)
				if err != nil {
					return err
				}
				mu.Lock()
				writes = append(writes, write)
				mu.Unlock()
			}
		}
		return nil
	})
	require.NoError(b, err)
	return writes
}

// coverageWriter makes one actor's writes.
type coverageWriter struct {
	m     *mirror
	c     client.Client
	actor string
	op    *operatorRun
	run   int
	seq   int
}

// write makes one write of kind and waits until Git shows it.
func (w *coverageWriter) write(ctx context.Context, kind string, cycle int) (coverageWrite, error) {
	w.seq++
	cm := fmt.Sprintf("%s-r%d-c%02d", w.actor, w.run, cycle)
	key := client.ObjectKey{Namespace: w.m.name, Name: cm}
	marker := fmt.Sprintf("%s-r%d-w%03d", w.actor, w.run, w.seq)
	write := coverageWrite{actor: w.actor, op: kind, file: w.m.name + "/configmaps/" + cm + ".yaml", marker: marker}
	var err error
	switch kind {
	case "apply (create)":
		obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}, Data: map[string]string{"v": marker}}
		obj.Annotations = map[string]string{lastAppliedAnnotation: lastApplied(key, marker)}
		err = w.c.Create(ctx, obj)
	case "edit (PUT)":
		var obj corev1.ConfigMap
		if err = w.c.Get(ctx, key, &obj); err == nil {
			obj.Data["v"] = marker
			err = w.c.Update(ctx, &obj)
		}
	case "merge patch":
		err = w.patch(ctx, key, types.MergePatchType, map[string]any{"data": map[string]string{"v": marker}})
	case "apply (patch)":
		err = w.patch(ctx, key, types.StrategicMergePatchType, map[string]any{
			"metadata": map[string]any{"annotations": map[string]string{lastAppliedAnnotation: lastApplied(key, marker)}},
			"data":     map[string]string{"v": marker}})
	case "server-side apply (helm)":
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"namespace": key.Namespace, "name": key.Name}, "data": map[string]any{"v": marker}}}
		err = w.c.Patch(ctx, u, client.Apply, client.FieldOwner("helm"), client.ForceOwnership)
	case "scale":
		// 100 and up: no replica count is a prefix of another's line.
		replicas := int32(100 + w.run*coverageCycles + cycle)
		write.file, write.marker = w.m.name+"/apps/deployments/"+w.actor+"-web.yaml", fmt.Sprintf("replicas: %d", replicas)
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: w.m.name, Name: w.actor + "-web"}}
		err = w.c.SubResource("scale").Update(ctx, d, client.WithSubResourceBody(&autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: replicas}}))
	case "delete":
		write.marker = ""
		err = w.c.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}})
	}
	if err != nil {
		return coverageWrite{}, fmt.Errorf("%s's %s of %s: %w", w.actor, kind, key, err)
	}
	_, err = pollHeads(ctx, w.m.remote, w.op, 50*time.Millisecond, editTimeout, func(ctx context.Context, head string) (bool, error) {
		content, err := w.m.remote.show(ctx, head, write.file)
		if write.marker == "" {
			return err != nil, nil
		}
		return err == nil && strings.Contains(content, write.marker), nil
	})
	if err != nil {
		return coverageWrite{}, fmt.Errorf("waiting for %s's %s of %s in Git: %w", w.actor, kind, key, err)
	}
	return write, nil
}

func (w *coverageWriter) patch(ctx context.Context, key client.ObjectKey, pt types.PatchType, body map[string]any) error {
	raw, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("encoding the patch of %s: %w", key, err)
	}
	return w.c.Patch(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}, client.RawPatch(pt, raw))
}

// lastApplied is the annotation kubectl apply writes for a ConfigMap of
// one key.
func lastApplied(key client.ObjectKey, value string) string {
	raw, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"namespace": key.Namespace, "name": key.Name}, "data": map[string]string{"v": value}})
	return string(raw)
}

// coverageTally counts writes by the author of the commit that brought
// them into Git.
type coverageTally struct{ right, unresolved, wrong, missing int }

// tallyCoverage finds, for each write, the first commit on main that put
// its marker into its file (for a delete: that removed the file) and
// compares that commit's author with the actor. It adds to byOp.
func tallyCoverage(b *testing.B, m *mirror, writes []coverageWrite, byOp map[string]*coverageTally) coverageTally {
	b.Helper()
	ctx := context.Background()
	repo, ok := m.remote.(bareRemote)
	require.True(b, ok, "coverage reads the bare repository")
	var total coverageTally
	for _, w := range writes {
		args := []string{"log", "--reverse", "--format=%an", branchRef}
		if w.marker == "" {
			args = append(args, "--diff-filter=D")
		} else {
			args = append(args, "-S"+w.marker)
		}
		out, _, err := repo.git(ctx, nil, append(args, "--", repo.path+"/"+w.file)...)
		require.NoError(b, err)
		author, _, _ := strings.Cut(out, "\n")
		t := byOp[w.op]
		if t == nil {
			t = &coverageTally{}
			byOp[w.op] = t
		}
		for _, tally := range []*coverageTally{&total, t} {
			switch {
			case author == "":
				tally.missing++
			case author == w.actor:
				tally.right++
			case author == attribution.UnresolvedAuthorName:
				tally.unresolved++
			default:
				tally.wrong++
			}
		}
	}
	return total
}

func sumOf(values []float64) float64 {
	total := 0.0
	for _, v := range values {
		total += v
	}
	return total
}
