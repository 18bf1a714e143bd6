package main

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
)

const (
	namespace   = "demo"
	repoName    = "demo"
	gitUser     = "mirror"
	gitPassword = "demo-password"
	targetName  = "demo-mirror"
	mirrorPath  = "clusters/demo"
)

func inDemo(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: namespace, Name: name}
}

// mirrorSetup is the configuration a user writes: which namespace may use
// the cluster, where Git is, which branch and path, and what to mirror.
func mirrorSetup(repoURL string) []client.Object {
	return []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}},
		&v1alpha3.ClusterProvider{ObjectMeta: metav1.ObjectMeta{Name: v1alpha3.DefaultClusterProvider},
			Spec: v1alpha3.ClusterProviderSpec{AllowedNamespaces: &v1alpha3.NamespacePolicy{Names: []string{namespace}}}},
		&corev1.Secret{ObjectMeta: inDemo("git-credentials"),
			StringData: map[string]string{"username": gitUser, "password": gitPassword}},
		&v1alpha3.GitProvider{ObjectMeta: inDemo("local-git"), Spec: v1alpha3.GitProviderSpec{
			URL:             repoURL,
			Forge:           &v1alpha3.ForgeSpec{Type: v1alpha3.ForgeGit},
			SecretRef:       &v1alpha3.LocalObjectReference{Name: "git-credentials"},
			AllowedBranches: []string{"main"},
			Push:            v1alpha3.PushSpec{CommitWindow: &metav1.Duration{Duration: time.Second}},
		}},
		&v1alpha3.GitTarget{ObjectMeta: inDemo(targetName), Spec: v1alpha3.GitTargetSpec{
			ProviderRef: v1alpha3.GitProviderReference{Name: "local-git"}, Branch: "main", Path: mirrorPath,
		}},
		&v1alpha3.WatchRule{ObjectMeta: inDemo("configmaps-and-deployments"), Spec: v1alpha3.WatchRuleSpec{
			TargetRef: v1alpha3.TargetReference{Name: targetName},
			Rules: []v1alpha3.NamespacedResourceRule{{ResourceSelector: v1alpha3.ResourceSelector{
				Resources: []string{"configmaps", "deployments"},
			}}},
		}},
	}
}

// workloads are the objects the demo mirrors, with the file each one
// becomes: {path}/{namespace}/{group}/{resource}/{name}.yaml.
func workloads() (objs []client.Object, files []string) {
	labels := map[string]string{"app": "web"}
	objs = []client.Object{
		&corev1.ConfigMap{ObjectMeta: inDemo("app-config"),
			Data: map[string]string{"LOG_LEVEL": "info", "config.yaml": "listen: :8080\nretries: 3\n"}},
		&corev1.ConfigMap{ObjectMeta: inDemo("feature-flags"),
			Data: map[string]string{"dark-mode": "false", "new-checkout": "true"}},
		&appsv1.Deployment{ObjectMeta: inDemo("web"), Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
			},
		}},
	}
	files = []string{
		mirrorPath + "/demo/configmaps/app-config.yaml",
		mirrorPath + "/demo/configmaps/feature-flags.yaml",
		mirrorPath + "/demo/apps/deployments/web.yaml",
	}
	return objs, files
}

// applySamples creates the mirror's configuration, then the workloads.
func (d *demo) applySamples(ctx context.Context) error {
	d.say("Applying the mirror configuration:")
	if err := d.create(ctx, mirrorSetup(d.git.HTTPURL(repoName))); err != nil {
		return err
	}
	d.say("Applying sample workloads in namespace %s:", namespace)
	objs, _ := workloads()
	return d.create(ctx, objs)
}

func (d *demo) create(ctx context.Context, objs []client.Object) error {
	for _, obj := range objs {
		gvk, err := apiutil.GVKForObject(obj, d.kube.Scheme())
		if err != nil {
			return fmt.Errorf("naming the kind of %s: %w", obj.GetName(), err)
		}
		name := obj.GetName()
		if obj.GetNamespace() != "" {
			name = obj.GetNamespace() + "/" + name
		}
		if err := d.kube.Client().Create(ctx, obj); err != nil {
			return fmt.Errorf("creating %s %s: %w", gvk.Kind, name, err)
		}
		fmt.Fprintf(d.Out, "      %s %s\n", gvk.Kind, name)
	}
	return nil
}
