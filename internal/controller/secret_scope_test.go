package controller

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
)

// forbiddingReader refuses every read, as the API server does without a
// grant.
type forbiddingReader struct{ ctrl.Reader }

func (forbiddingReader) Get(_ context.Context, key ctrl.ObjectKey, _ ctrl.Object, _ ...ctrl.GetOption) error {
	return apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, key.Name, nil)
}

// A kubeconfig Secret RBAC refuses is SecretNamespaceNotGranted, naming
// the namespace and the chart's Role, not an invalid spec.
func TestARefusedKubeconfigSecretSaysWhichGrantIsMissing(t *testing.T) {
	cp := &v1alpha3.ClusterProvider{Spec: v1alpha3.ClusterProviderSpec{
		KubeConfig: &v1alpha3.KubeConfigReference{SecretRef: v1alpha3.SecretKeyReference{Name: "remote"}}}}
	_, err := sourceConfig(context.Background(), forbiddingReader{}, &rest.Config{}, "gitops-reverser", cp)
	require.Error(t, err)
	require.Equal(t, v1alpha3.ReasonSecretNamespaceNotGranted, sourceConfigReason(err))
	require.ErrorContains(t, err, "may not read the kubeconfig Secret gitops-reverser/remote")
	require.ErrorContains(t, err, "<fullname>-secrets")
	require.True(t, apierrors.IsForbidden(err), "the API server's answer is kept")
}
