package bench

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
	ghsim "github.com/configbutler/gitops-reverser/test/sim/github"
)

// fleetLabel marks the source namespaces of one scenario; the scenario's
// GitTarget admits them through spec.allowedSourceNamespaces.
const fleetLabel = "bench.configbutler.ai/fleet"

// mirror is one GitTarget writing one fresh repository. Its control
// namespace (named like the scenario) holds the credentials, the
// GitProvider, the GitTarget and a WatchRule for ConfigMaps.
type mirror struct {
	name   string
	target string
	repo   *forgeRepo
	remote remote
}

// mirrorOptions shape a scenario's mirror.
type mirrorOptions struct {
	// forge is where the repository lives and what the operator commits
	// through; empty is forgeGit.
	forge forgeKind
	// simOptions configure the GitHub simulator (forgeGitHub only).
	simOptions []ghsim.Option
	// commitWindow is spec.push.commitWindow; zero keeps the CRD default.
	commitWindow time.Duration
	// fleet, when set, makes the rule follow every namespace labeled
	// fleetLabel=fleet (sourceNamespace "*" and an admitting selector);
	// otherwise the rule follows the control namespace only.
	fleet string
	// resource is the core resource the rule follows; empty is configmaps.
	resource string
}

// newMirror creates the repository and the custom resources of a mirror.
// The operator is not running yet: it finds them when it starts.
func newMirror(ctx context.Context, e *benchEnv, name string, opts mirrorOptions) (*mirror, error) {
	if opts.forge == "" {
		opts.forge = forgeGit
	}
	path := "clusters/" + name
	repo, err := newForgeRepo(e, opts.forge, name, path, opts.simOptions...)
	if err != nil {
		return nil, err
	}
	m := &mirror{name: name, target: "mirror", repo: repo, remote: repo.remote}
	provider := &v1alpha3.GitProvider{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "repo"},
		Spec: v1alpha3.GitProviderSpec{
			URL:             repo.url,
			Forge:           &repo.forge,
			SecretRef:       &v1alpha3.LocalObjectReference{Name: "git-credentials"},
			AllowedBranches: []string{"main"},
		}}
	if opts.commitWindow > 0 {
		provider.Spec.Push.CommitWindow = &metav1.Duration{Duration: opts.commitWindow}
	}
	target := &v1alpha3.GitTarget{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: m.target},
		Spec: v1alpha3.GitTargetSpec{ProviderRef: v1alpha3.GitProviderReference{Name: "repo"}, Branch: "main", Path: path}}
	resource := opts.resource
	if resource == "" {
		resource = "configmaps"
	}
	rule := v1alpha3.NamespacedResourceRule{ResourceSelector: v1alpha3.ResourceSelector{
		APIGroups: []string{""}, Resources: []string{resource}}}
	if opts.fleet != "" {
		target.Spec.AllowedSourceNamespaces = &v1alpha3.NamespacePolicy{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{fleetLabel: opts.fleet}}}
		rule.SourceNamespace = "*"
	}
	objects := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "git-credentials"}, StringData: repo.secret},
		provider,
		target,
		&v1alpha3.WatchRule{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "configmaps"},
			Spec: v1alpha3.WatchRuleSpec{TargetRef: v1alpha3.TargetReference{Name: m.target},
				Rules: []v1alpha3.NamespacedResourceRule{rule}}},
	}
	for _, obj := range objects {
		if err := e.client().Create(ctx, obj); err != nil {
			repo.close()
			return nil, fmt.Errorf("creating %T %s for mirror %s: %w", obj, obj.GetName(), name, err)
		}
	}
	return m, nil
}

// retire deletes the mirror's GitTarget and every ConfigMap in namespaces,
// so operator runs of later scenarios neither mirror nor cache them (the
// operator caches the metadata of every ConfigMap in the cluster, so a
// leftover fleet would inflate a later scenario's memory). Namespaces stay:
// without kube-controller-manager nothing would finish deleting them. The
// repository's GitHub simulator, if any, stops.
func (m *mirror) retire(ctx context.Context, e *benchEnv, namespaces ...string) error {
	defer m.repo.close()
	target := &v1alpha3.GitTarget{ObjectMeta: metav1.ObjectMeta{Namespace: m.name, Name: m.target}}
	if err := e.client().Delete(ctx, target); err != nil {
		return fmt.Errorf("deleting GitTarget %s/%s: %w", m.name, m.target, err)
	}
	// Later scenarios' operators would otherwise probe this provider, whose
	// repository may be gone, and count those requests as theirs.
	provider := &v1alpha3.GitProvider{ObjectMeta: metav1.ObjectMeta{Namespace: m.name, Name: "repo"}}
	if err := e.client().Delete(ctx, provider); err != nil {
		return fmt.Errorf("deleting GitProvider %s/repo: %w", m.name, err)
	}
	for _, ns := range append(namespaces, m.name) {
		if err := e.client().DeleteAllOf(ctx, &corev1.ConfigMap{}, client.InNamespace(ns)); err != nil {
			return fmt.Errorf("deleting the ConfigMaps in %s: %w", ns, err)
		}
	}
	return nil
}

// resetStatus clears the GitTarget's status, so a Ready condition seen
// afterwards was written by the operator run that started after it.
func (m *mirror) resetStatus(ctx context.Context, e *benchEnv) error {
	var target v1alpha3.GitTarget
	if err := e.client().Get(ctx, client.ObjectKey{Namespace: m.name, Name: m.target}, &target); err != nil {
		return fmt.Errorf("reading GitTarget %s/%s: %w", m.name, m.target, err)
	}
	target.Status = v1alpha3.GitTargetStatus{}
	if err := e.client().Status().Update(ctx, &target); err != nil {
		return fmt.Errorf("clearing the status of GitTarget %s/%s: %w", m.name, m.target, err)
	}
	return nil
}

// ready reports whether the GitTarget is Ready for its current generation.
func (m *mirror) ready(ctx context.Context, e *benchEnv) (bool, error) {
	var target v1alpha3.GitTarget
	if err := e.client().Get(ctx, client.ObjectKey{Namespace: m.name, Name: m.target}, &target); err != nil {
		return false, fmt.Errorf("reading GitTarget %s/%s: %w", m.name, m.target, err)
	}
	for _, c := range target.Status.Conditions {
		if c.Type == v1alpha3.ConditionReady {
			return c.Status == metav1.ConditionTrue && c.ObservedGeneration == target.Generation, nil
		}
	}
	return false, nil
}

// inParallel runs do(0..n-1) on workers goroutines and returns the first
// error; the others still finish what they started.
func inParallel(ctx context.Context, n, workers int, do func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := do(ctx, i); err != nil {
					errs <- err
					cancel()
					return
				}
			}
		}()
	}
feed:
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	close(errs)
	return <-errs
}

var scenarioRuns atomic.Int32

// uniqueName gives every scenario run its own namespaces and repository,
// so -count N and reruns within one control plane do not collide.
func uniqueName(base string) string {
	return fmt.Sprintf("%s%d", base, scenarioRuns.Add(1))
}

// waitReady polls the GitTarget until this operator run reports it Ready.
func waitReady(ctx context.Context, e *benchEnv, m *mirror, op *operatorRun, timeout time.Duration) error {
	return waitReadyEvery(ctx, e, m, op, timeout, 100*time.Millisecond)
}

// waitReadyEvery is waitReady polling every interval (finer where the time
// to Ready is the figure).
func waitReadyEvery(ctx context.Context, e *benchEnv, m *mirror, op *operatorRun, timeout, interval time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		ready, err := m.ready(ctx, e)
		if err != nil || ready {
			return err
		}
		if err := op.exited(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("GitTarget %s/%s not Ready within %s (operator log %s)", m.name, m.target, timeout, op.logPath)
		}
		time.Sleep(interval)
	}
}

// fileContains is a pollHeads check: file (under the target's path) at the
// head contains text.
func fileContains(m *mirror, file, text string) func(ctx context.Context, head string) (bool, error) {
	return func(ctx context.Context, head string) (bool, error) {
		content, err := m.remote.show(ctx, head, file)
		if err != nil {
			return false, nil // not written yet
		}
		return strings.Contains(content, text), nil
	}
}
