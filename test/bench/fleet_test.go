package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	fleetNamespaces   = 20
	fleetPerNamespace = 100
	fleetKeys         = 5
	// apiWorkers is how many API calls the benchmark keeps in flight when it
	// creates or changes the fleet.
	apiWorkers = 8
)

// fleet is the scenarios' population: fleetNamespaces namespaces labeled
// fleetLabel=name, each with fleetPerNamespace ConfigMaps of fleetKeys keys
// (perNamespace of them when set: scenario K's larger fleets).
type fleet struct {
	name         string
	perNamespace int
}

func (f fleet) perNS() int {
	if f.perNamespace > 0 {
		return f.perNamespace
	}
	return fleetPerNamespace
}

func (f fleet) size() int { return fleetNamespaces * f.perNS() }

func (f fleet) namespace(i int) string { return fmt.Sprintf("%s-%02d", f.name, i/f.perNS()) }

func (f fleet) configMapName(i int) string { return fmt.Sprintf("cm-%04d", i) }

func (f fleet) key(i int) client.ObjectKey {
	return client.ObjectKey{Namespace: f.namespace(i), Name: f.configMapName(i)}
}

// namespaces lists the fleet's namespaces.
func (f fleet) namespaces() []string {
	out := make([]string, 0, fleetNamespaces)
	for n := range fleetNamespaces {
		out = append(out, f.namespace(n*f.perNS()))
	}
	return out
}

// create makes the labeled namespaces and all ConfigMaps, apiWorkers
// creates at a time.
func (f fleet) create(ctx context.Context, c client.Client) error {
	for _, name := range f.namespaces() {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{fleetLabel: f.name}}}
		if err := c.Create(ctx, ns); err != nil {
			return fmt.Errorf("creating namespace %s: %w", ns.Name, err)
		}
	}
	return inParallel(ctx, f.size(), apiWorkers, func(ctx context.Context, i int) error {
		data := make(map[string]string, fleetKeys)
		for k := range fleetKeys {
			data[fmt.Sprintf("key-%d", k)] = fmt.Sprintf("initial value %d of %s", k, f.configMapName(i))
		}
		key := f.key(i)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}, Data: data}
		if err := c.Create(ctx, cm); err != nil {
			return fmt.Errorf("creating ConfigMap %s: %w", key, err)
		}
		return nil
	})
}

// setValue writes value into key-0 of ConfigMap i with one merge patch:
// a single API write, as fast as the API server takes it.
func (f fleet) setValue(ctx context.Context, c client.Client, i int, value string) error {
	return patchValue(ctx, c, f.key(i), value)
}

// patchValue sets key-0 of one ConfigMap with a JSON merge patch.
func patchValue(ctx context.Context, c client.Client, key client.ObjectKey, value string) error {
	patch, err := json.Marshal(map[string]any{"data": map[string]string{"key-0": value}})
	if err != nil {
		return fmt.Errorf("encoding the patch of ConfigMap %s: %w", key, err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	if err := c.Patch(ctx, cm, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("updating ConfigMap %s: %w", key, err)
	}
	return nil
}

// deleteConfigMap removes ConfigMap i.
func (f fleet) deleteConfigMap(ctx context.Context, c client.Client, i int) error {
	key := f.key(i)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	if err := c.Delete(ctx, cm); err != nil {
		return fmt.Errorf("deleting ConfigMap %s: %w", key, err)
	}
	return nil
}

// newFleetMirror creates a fleet and a mirror following it, named after
// base. The fleet exists before any operator runs, as in a cold start; both
// are retired when the benchmark ends (after its deferred operator stop).
func newFleetMirror(b *testing.B, e *benchEnv, base string, opts mirrorOptions) (*mirror, fleet) {
	b.Helper()
	return newFleetMirrorOf(b, e, base, 0, opts)
}

// newFleetMirrorOf is newFleetMirror with perNamespace ConfigMaps in each
// namespace (zero: fleetPerNamespace).
func newFleetMirrorOf(b *testing.B, e *benchEnv, base string, perNamespace int, opts mirrorOptions) (*mirror, fleet) {
	b.Helper()
	ctx := context.Background()
	name := uniqueName(base)
	f := fleet{name: name, perNamespace: perNamespace}
	opts.fleet = f.name
	m, err := newMirror(ctx, e, name, opts)
	require.NoError(b, err)
	b.Cleanup(func() { require.NoError(b, m.retire(ctx, e, f.namespaces()...)) })
	start := time.Now()
	require.NoError(b, f.create(ctx, e.client()))
	b.Logf("created %d ConfigMaps in %d namespaces in %s", f.size(), fleetNamespaces, time.Since(start).Round(time.Millisecond))
	return m, f
}

// startOnFleet starts an operator run and waits until the remote holds the
// whole fleet, polling every 150 ms; it returns the run and the moment the
// fleet was seen. The caller stops the run.
func startOnFleet(b *testing.B, e *benchEnv, m *mirror, f fleet, runName string) (*operatorRun, time.Time) {
	b.Helper()
	op, err := startOperator(e, runName)
	require.NoError(b, err)
	seen, err := pollHeads(context.Background(), m.remote, op, 150*time.Millisecond, 5*time.Minute, holdsFleet(m, f, f.size()))
	if err != nil {
		stopOperator(b, op)
		require.NoError(b, err, "waiting for all %d ConfigMaps in Git", f.size())
	}
	return op, seen
}

// holdsFleet is a pollHeads check: the head holds exactly want files of the
// fleet (and nothing of the fleet beyond them).
func holdsFleet(m *mirror, f fleet, want int) func(ctx context.Context, head string) (bool, error) {
	return func(ctx context.Context, head string) (bool, error) {
		n, err := countFleetFiles(ctx, m, f, head)
		return n == want, err
	}
}

func countFleetFiles(ctx context.Context, m *mirror, f fleet, head string) (int, error) {
	files, err := m.remote.files(ctx, head)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, file := range files {
		if strings.HasPrefix(file, f.name+"-") {
			n++
		}
	}
	return n, nil
}
