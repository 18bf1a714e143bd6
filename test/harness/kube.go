package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/configbutler/gitops-reverser/internal/kubescheme"
)

// KubeOptions configures the control plane. The zero value starts etcd and
// kube-apiserver with RBAC and installs the operator's CRDs.
type KubeOptions struct {
	// CRDDirs are installed after start; nil means the generated CRDs of this
	// repository (charts/gitops-reverser/crds).
	CRDDirs []string
	// SkipCRDs starts an empty API server.
	SkipCRDs bool
	// AuditPolicyFile and AuditWebhookConfigFile (kubeconfig format) turn on
	// the audit webhook backend in batch mode.
	AuditPolicyFile        string
	AuditWebhookConfigFile string
	// AuditBatchMaxWait is the audit batch delay (default 500ms).
	AuditBatchMaxWait time.Duration
	// ExtraFlags are further kube-apiserver flags (name without "--").
	ExtraFlags map[string][]string
	// Webhooks are admission webhook configurations to install; envtest
	// serves them from a local listener with a generated CA
	// (Webhooks.LocalServingHost/Port/CertDir tell the webhook server where).
	Webhooks envtest.WebhookInstallOptions
}

// Kube is a running etcd + kube-apiserver on loopback.
type Kube struct {
	env    *envtest.Environment
	config *rest.Config
	scheme *runtime.Scheme
	client client.Client
	// certDir holds the API server's certificates; removed by Stop.
	certDir string
}

// StartKube builds (once per machine) and starts etcd and kube-apiserver on
// free loopback ports, with an admin identity (system:masters) and the
// operator's CRDs installed and Established.
func StartKube(opts KubeOptions) (*Kube, error) {
	apiserverPath, err := BinaryPath("kube-apiserver", KubeAPIServerVersion)
	if err != nil {
		return nil, err
	}
	etcdPath, err := BinaryPath("etcd", EtcdVersion)
	if err != nil {
		return nil, err
	}
	scheme, err := NewScheme()
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		Scheme:                   scheme,
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: 60 * time.Second,
		ControlPlaneStopTimeout:  30 * time.Second,
		AttachControlPlaneOutput: os.Getenv("HARNESS_KUBE_OUTPUT") != "",
	}
	env.WebhookInstallOptions = opts.Webhooks
	env.ControlPlane.Etcd = &envtest.Etcd{Path: etcdPath}
	apiServer := env.ControlPlane.GetAPIServer()
	apiServer.Path = apiserverPath
	// A directory of our own (envtest's own is wiped on stop) keeps the
	// serving and client CA certificates across StopAPIServer and
	// StartAPIServer, so configs made before a restart still work after it.
	certDir, err := os.MkdirTemp("", "harness-kube-apiserver-")
	if err != nil {
		return nil, fmt.Errorf("creating the API server's certificate directory: %w", err)
	}
	apiServer.CertDir = certDir
	configureAPIServerFlags(apiServer.Configure(), opts)
	if !opts.SkipCRDs {
		env.CRDDirectoryPaths = opts.CRDDirs
		if env.CRDDirectoryPaths == nil {
			env.CRDDirectoryPaths = []string{CRDDir()}
		}
	}
	cfg, err := env.Start()
	if err != nil {
		_ = os.RemoveAll(certDir)
		return nil, fmt.Errorf("starting etcd + kube-apiserver: %w", err)
	}
	k := &Kube{env: env, config: cfg, scheme: scheme, certDir: certDir}
	if k.client, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		k.Stop()
		return nil, fmt.Errorf("creating the admin client: %w", err)
	}
	return k, nil
}

func configureAPIServerFlags(args *envtest.Arguments, opts KubeOptions) {
	// On loopback the API server cannot advertise a public address, and
	// without kube-controller-manager nobody maintains the endpoints anyway.
	args.Set("advertise-address", "127.0.0.1")
	args.Set("endpoint-reconciler-type", "none")
	if opts.AuditWebhookConfigFile != "" {
		wait := opts.AuditBatchMaxWait
		if wait == 0 {
			wait = 500 * time.Millisecond
		}
		args.Set("audit-policy-file", opts.AuditPolicyFile)
		args.Set("audit-webhook-config-file", opts.AuditWebhookConfigFile)
		args.Set("audit-webhook-mode", "batch")
		args.Set("audit-webhook-batch-max-wait", wait.String())
	}
	for name, values := range opts.ExtraFlags {
		args.Set(name, values...)
	}
}

// CRDDir is the directory of the generated CRD manifests.
func CRDDir() string {
	return filepath.Join(RepoRoot(), "charts", "gitops-reverser", "crds")
}

// NewScheme returns the operator's scheme (see internal/kubescheme).
func NewScheme() (*runtime.Scheme, error) { return kubescheme.New() }

// Config is the admin (system:masters) REST config.
func (k *Kube) Config() *rest.Config { return rest.CopyConfig(k.config) }

// Client is an admin client.
func (k *Kube) Client() client.Client { return k.client }

// Scheme is the scheme Client uses.
func (k *Kube) Scheme() *runtime.Scheme { return k.scheme }

// Kubeconfig returns a kubeconfig file's bytes for the admin identity, for
// processes started outside the test (the operator, kubectl).
func (k *Kube) Kubeconfig() ([]byte, error) {
	user, err := k.env.AddUser(envtest.User{Name: "harness-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, fmt.Errorf("adding the kubeconfig admin user: %w", err)
	}
	b, err := user.KubeConfig()
	if err != nil {
		return nil, fmt.Errorf("rendering the admin kubeconfig: %w", err)
	}
	return b, nil
}

// ConfigAs returns a REST config that acts as user with groups, by
// impersonation from the admin identity, so RBAC applies as it would to that
// user.
func (k *Kube) ConfigAs(user string, groups ...string) *rest.Config {
	cfg := k.Config()
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: append([]string{"system:authenticated"}, groups...)}
	return cfg
}

// ConfigAsServiceAccount returns a REST config acting as the service account
// namespace/name, with the groups the API server gives service accounts.
func (k *Kube) ConfigAsServiceAccount(namespace, name string) *rest.Config {
	return k.ConfigAs("system:serviceaccount:"+namespace+":"+name,
		"system:serviceaccounts", "system:serviceaccounts:"+namespace)
}

// ConfigAsCertificateUser returns a REST config that authenticates as
// user with groups by a client certificate the API server trusts, without
// impersonation: the API server (and its audit events) see user itself.
func (k *Kube) ConfigAsCertificateUser(user string, groups ...string) (*rest.Config, error) {
	u, err := k.env.AddUser(envtest.User{Name: user, Groups: groups}, nil)
	if err != nil {
		return nil, fmt.Errorf("adding the client-certificate user %s: %w", user, err)
	}
	return u.Config(), nil
}

// ConfigWithToken returns a REST config that authenticates with a bearer
// token alone (a service account's TokenRequest token, say): it trusts
// the API server's CA and carries no other credentials.
func (k *Kube) ConfigWithToken(token string) *rest.Config {
	cfg := rest.AnonymousClientConfig(k.Config())
	cfg.BearerToken = token
	return cfg
}

// ServiceAccountToken is a token for the existing ServiceAccount
// namespace/name from the TokenRequest API, valid for an hour: with
// ConfigWithToken, a client that authenticates as that account itself.
func (k *Kube) ServiceAccountToken(ctx context.Context, namespace, name string) (string, error) {
	clientset, err := kubernetes.NewForConfig(k.Config())
	if err != nil {
		return "", fmt.Errorf("creating a clientset: %w", err)
	}
	hour := int64(3600)
	tr, err := clientset.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &hour}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("requesting a token for %s/%s: %w", namespace, name, err)
	}
	if tr.Status.Token == "" {
		return "", fmt.Errorf("the TokenRequest for %s/%s returned no token", namespace, name)
	}
	return tr.Status.Token, nil
}

// ClientAs is a client acting as user with groups (see ConfigAs).
func (k *Kube) ClientAs(user string, groups ...string) (client.Client, error) {
	c, err := client.New(k.ConfigAs(user, groups...), client.Options{Scheme: k.scheme})
	if err != nil {
		return nil, fmt.Errorf("creating a client as %s: %w", user, err)
	}
	return c, nil
}

// InstalledCRDs are the CRDs installed at start.
func (k *Kube) InstalledCRDs() []*apiextensionsv1.CustomResourceDefinition { return k.env.CRDs }

// Webhooks are the installed admission webhook options, with the serving
// host, port and certificate directory a webhook server must use.
func (k *Kube) Webhooks() envtest.WebhookInstallOptions { return k.env.WebhookInstallOptions }

// Stop stops kube-apiserver and etcd and removes their data.
func (k *Kube) Stop() {
	if k == nil || k.env == nil {
		return
	}
	_ = k.env.Stop()
	_ = os.RemoveAll(k.certDir)
}

// StopAPIServer stops kube-apiserver and leaves etcd running: clients see
// connections refused until StartAPIServer.
func (k *Kube) StopAPIServer() error {
	if err := k.env.ControlPlane.APIServer.Stop(); err != nil {
		return fmt.Errorf("stopping kube-apiserver: %w", err)
	}
	return nil
}

// StartAPIServer starts kube-apiserver again after StopAPIServer, on the
// same address with the same certificates, and returns once it is healthy.
func (k *Kube) StartAPIServer() error {
	if err := k.env.ControlPlane.APIServer.Start(); err != nil {
		return fmt.Errorf("starting kube-apiserver again: %w", err)
	}
	return nil
}

// RunWithKube is a package's TestMain body: it starts a control plane into
// *kube, runs the tests, stops it, and returns the exit code for os.Exit.
func RunWithKube(m *testing.M, opts KubeOptions, kube **Kube) int {
	k, err := StartKube(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	*kube = k
	defer k.Stop()
	return m.Run()
}

// Exit ends a TestMain whose setup returned (code, err): the setup's error
// on standard error and status 1, or the tests' own code.
func Exit(code int, err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(code)
}
