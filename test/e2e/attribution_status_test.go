package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/configbutler/gitops-reverser/internal/attribution"
)

// TestStatusWritesDoNotWaitForAnAuthor: a status write never gets an
// audit fact (the policy leaves */status out, as the chart's does) and
// renders exactly what Git holds, so it must not wait the grace for an
// author. Five status writes sit between two replica changes of alice's;
// her second change is committed as hers, and not one resolution came out
// absent: the status writes were dropped before they waited.
func TestStatusWritesDoNotWaitForAnAuthor(t *testing.T) {
	m := newMirror(t, "attr-status", "deployments")
	startOperatorWith(t, withAttribution(attribution.DefaultGrace))
	waitReady(t, m.ns, m.target)
	ctx := context.Background()
	alice := actor(t, "alice", nil)
	labels := map[string]string{"app": "web"}
	require.NoError(t, alice.Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "web"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}}}}}))
	path := m.path + "/attr-status/apps/deployments/web.yaml"
	scale := func(replicas int) {
		patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"replicas": replicas}})
		require.NoError(t, alice.Patch(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "web"}},
			client.RawPatch(types.MergePatchType, patch)))
		eventually(t, fmt.Sprintf("%d replicas in Git", replicas), func() bool {
			return containsLine(gitFile(t, m.repo, path), fmt.Sprintf("  replicas: %d", replicas))
		})
		require.Equal(t, gitAuthor("alice"), authorOf(t, m, path), gitLog(t, m.repo))
	}
	scale(2)

	for i := range 5 {
		patch, _ := json.Marshal(map[string]any{"status": map[string]any{"observedGeneration": i + 1, "replicas": 2}})
		require.NoError(t, env.kube.Client().Status().Patch(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "web"}},
			client.RawPatch(types.MergePatchType, patch)))
	}
	scale(3)

	require.Zero(t, metricSumWhere(t, "gitopsreverser_attribution_resolutions_total", map[string]string{"tier": string(attribution.TierAbsent)}),
		"no change waited out the grace without an author")
	require.NotContains(t, gitFile(t, m.repo, path), "observedGeneration")
}
