package operator

import (
	"context"
	"fmt"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
)

// access is one permission the operator cannot work without.
type access struct {
	verb, group, resource, namespace string
	// hint says which chart value grants it, when that is not obvious.
	hint string
}

// object names what the access is to: resource[.group][/subresource] and
// where.
func (a access) object() string {
	name := resourceOf(a)
	if a.group != "" {
		name += "." + a.group
	}
	if sub := subresourceOf(a); sub != "" {
		name += "/" + sub
	}
	if a.namespace != "" {
		return name + " in namespace " + a.namespace
	}
	return name + " cluster-wide"
}

// requiredAccess is what the manager's caches, the controllers' status
// patches and leader election use. Without any of it the operator would
// wait for caches that never sync and say nothing a user can act on.
// Mirrored types and Secret writes are not here: they are per GitTarget or
// per GitProvider, and reported in that object's status.
func requiredAccess(o Options) []access {
	var out []access
	kinds := []string{"gitproviders", "gittargets", "watchrules", "clusterwatchrules", "clusterproviders", "commitrequests"}
	for _, kind := range kinds {
		for _, verb := range []string{"list", "watch"} {
			out = append(out, access{verb: verb, group: v1alpha3.GroupVersion.Group, resource: kind})
		}
		out = append(out, access{verb: "patch", group: v1alpha3.GroupVersion.Group, resource: kind + "/status"})
	}
	out = append(out, access{verb: "delete", group: v1alpha3.GroupVersion.Group, resource: "commitrequests"})
	out = append(out, secretAccess(credentialNamespaces(o))...)
	for _, resource := range []string{"configmaps", "namespaces"} {
		out = append(out, access{verb: "list", resource: resource}, access{verb: "watch", resource: resource})
	}
	for _, verb := range []string{"list", "watch"} {
		out = append(out, access{verb: verb, group: "apiextensions.k8s.io", resource: "customresourcedefinitions"})
	}
	if o.LeaderElect {
		ns := orDefault(o.LeaderElectionNamespace, o.OperatorNamespace)
		for _, verb := range []string{"get", "create", "update"} {
			out = append(out, access{verb: verb, group: "coordination.k8s.io", resource: "leases", namespace: ns})
		}
	}
	return out
}

// secretAccess is what reading credentials needs: get (values) and
// list/watch (the metadata watch) on Secrets in each credential namespace,
// or cluster-wide when namespaces is nil.
func secretAccess(namespaces []string) []access {
	var out []access
	if namespaces == nil {
		hint := "with the chart: rbac.clusterWideSecrets=true, or name the namespaces in rbac.credentialNamespaces"
		for _, verb := range []string{"get", "list", "watch"} {
			out = append(out, access{verb: verb, resource: "secrets", hint: hint})
		}
		return out
	}
	for _, ns := range namespaces {
		hint := "with the chart: add " + ns + " to rbac.credentialNamespaces"
		for _, verb := range []string{"get", "list", "watch"} {
			out = append(out, access{verb: verb, resource: "secrets", namespace: ns, hint: hint})
		}
	}
	return out
}

// checkAccess asks the API server, with SelfSubjectAccessReviews, whether
// the operator's identity has every required permission, and names what is
// missing. Bindings created with the operator (a fresh install) can take a
// moment to apply, so a denial is asked again every two seconds for up to
// wait before it is final. A review that cannot be made is not a verdict:
// the caches then report for themselves.
func checkAccess(ctx context.Context, cfg *rest.Config, required []access, wait time.Duration) error {
	clientset, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("building a client for the permission check: %w", err)
	}
	deadline := time.Now().Add(wait)
	for {
		denied, ok := deniedAccess(ctx, clientset, required)
		if !ok || len(denied) == 0 {
			return nil
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("the operator's identity may not %s; bind it to the chart's ClusterRole and Role "+
				"(rbac.create=true) or grant these", describeDenied(denied))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(2*time.Second, time.Until(deadline))):
		}
	}
}

// deniedAccess returns the required access the API server denies; ok is
// false when a review could not be made.
func deniedAccess(ctx context.Context, clientset kubernetes.Interface, required []access) ([]access, bool) {
	var denied []access
	for _, a := range required {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: a.verb, Group: a.group, Resource: resourceOf(a), Subresource: subresourceOf(a), Namespace: a.namespace},
		}}
		answer, err := clientset.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			return nil, false
		}
		if !answer.Status.Allowed {
			denied = append(denied, a)
		}
	}
	return denied, true
}

// describeDenied lists denied access with the verbs of one object
// together: "list, watch gittargets.configbutler.ai cluster-wide".
func describeDenied(denied []access) string {
	var objects []string
	verbs, hints := map[string][]string{}, map[string]string{}
	for _, a := range denied {
		if _, seen := verbs[a.object()]; !seen {
			objects = append(objects, a.object())
			hints[a.object()] = a.hint
		}
		verbs[a.object()] = append(verbs[a.object()], a.verb)
	}
	parts := make([]string, len(objects))
	for i, object := range objects {
		parts[i] = strings.Join(verbs[object], ", ") + " " + object
		if hint := hints[object]; hint != "" {
			parts[i] += " (" + hint + ")"
		}
	}
	return strings.Join(parts, "; ")
}

func resourceOf(a access) string {
	resource, _, _ := strings.Cut(a.resource, "/")
	return resource
}

func subresourceOf(a access) string {
	_, sub, _ := strings.Cut(a.resource, "/")
	return sub
}
