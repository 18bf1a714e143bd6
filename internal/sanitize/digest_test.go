package sanitize_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/configbutler/gitops-reverser/internal/sanitize"
)

func TestDigestIsTheDigestOfWhatTheMirrorWrites(t *testing.T) {
	live := liveDeployment()
	content, err := sanitize.Render(live)
	require.NoError(t, err)
	require.Equal(t, sanitize.ContentDigest(content), sanitize.Digest(live))
	require.Len(t, sanitize.Digest(live), 64)
}

func TestDigestFollowsDesiredStateOnly(t *testing.T) {
	base := liveDeployment()
	cases := []struct {
		name   string
		change func(o *unstructured.Unstructured)
		same   bool
	}{
		{"another resourceVersion, as a review's object has none", func(o *unstructured.Unstructured) { o.SetResourceVersion("") }, true},
		{"server-owned metadata", func(o *unstructured.Unstructured) {
			o.SetGeneration(8)
			o.SetManagedFields(nil)
			o.SetUID("")
		}, true},
		{"status", func(o *unstructured.Unstructured) {
			require.NoError(t, unstructured.SetNestedField(o.Object, int64(9), "status", "readyReplicas"))
		}, true},
		{"a volatile annotation", func(o *unstructured.Unstructured) {
			annotations := o.GetAnnotations()
			if annotations == nil {
				annotations = map[string]string{}
			}
			annotations["kubectl.kubernetes.io/last-applied-configuration"] = `{"changed":true}`
			o.SetAnnotations(annotations)
		}, true},
		{"spec", func(o *unstructured.Unstructured) {
			require.NoError(t, unstructured.SetNestedField(o.Object, int64(5), "spec", "replicas"))
		}, false},
		{"a label", func(o *unstructured.Unstructured) { o.SetLabels(map[string]string{"app": "other"}) }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			changed := base.DeepCopy()
			tc.change(changed)
			require.Equal(t, tc.same, sanitize.Digest(changed) == sanitize.Digest(base))
		})
	}
}

func TestDigestOfNothingIsEmpty(t *testing.T) {
	require.Empty(t, sanitize.Digest(nil))
}
