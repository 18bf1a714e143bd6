package v1alpha3_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestCRDsAreEstablishedWithNamesAndColumns(t *testing.T) {
	ctx := context.Background()
	want := map[string]struct {
		shortName string
		scope     apiextensionsv1.ResourceScope
	}{
		"watchrules":        {"wr", apiextensionsv1.NamespaceScoped},
		"clusterwatchrules": {"cwr", apiextensionsv1.ClusterScoped},
		"commitrequests":    {"commitreq", apiextensionsv1.NamespaceScoped},
		"gittargets":        {"gt", apiextensionsv1.NamespaceScoped},
		"clusterproviders":  {"cp", apiextensionsv1.ClusterScoped},
		"gitproviders":      {"gp", apiextensionsv1.NamespaceScoped},
	}
	for plural, names := range want {
		t.Run(plural, func(t *testing.T) {
			var crd apiextensionsv1.CustomResourceDefinition
			require.NoError(t, kube.Client().Get(ctx, client.ObjectKey{Name: plural + ".configbutler.ai"}, &crd))
			require.True(t, conditionTrue(crd.Status.Conditions, apiextensionsv1.Established), "CRD %s not Established", plural)
			require.Equal(t, names.scope, crd.Spec.Scope)
			require.Contains(t, crd.Spec.Names.ShortNames, names.shortName)
			require.Contains(t, crd.Spec.Names.Categories, "gitops")
			require.Len(t, crd.Spec.Versions, 1)
			version := crd.Spec.Versions[0]
			require.Equal(t, "v1alpha3", version.Name)
			require.NotNil(t, version.Subresources.Status, "status subresource")
			columns := map[string]bool{}
			for _, c := range version.AdditionalPrinterColumns {
				columns[c.Name] = true
			}
			require.True(t, columns["Ready"] && columns["Reason"] && columns["Message"] && columns["Age"], "printer columns: %v", columns)
			if plural == "gittargets" {
				require.True(t, columns["Branch"] && columns["Path"] && columns["Last Commit"] && columns["Committed"] && columns["Suspended"],
					"GitTarget printer columns: %v", columns)
			}
		})
	}
}

// TestGitopsCategoryListsEveryKind checks what `kubectl get gitops` relies
// on: discovery reporting the category on all six resources.
func TestGitopsCategoryListsEveryKind(t *testing.T) {
	dc, err := discovery.NewDiscoveryClientForConfig(kube.Config())
	require.NoError(t, err)
	list, err := dc.ServerResourcesForGroupVersion("configbutler.ai/v1alpha3")
	require.NoError(t, err)
	var inCategory []string
	for _, r := range list.APIResources {
		for _, c := range r.Categories {
			if c == "gitops" {
				inCategory = append(inCategory, r.Name)
			}
		}
	}
	require.ElementsMatch(t, []string{"watchrules", "clusterwatchrules", "commitrequests", "gittargets",
		"clusterproviders", "gitproviders"}, inCategory)
}

func conditionTrue(conds []apiextensionsv1.CustomResourceDefinitionCondition, t apiextensionsv1.CustomResourceDefinitionConditionType) bool {
	for _, c := range conds {
		if c.Type == t {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}
