package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/configbutler/gitops-reverser/internal/operator"
)

// flags are the command line, turned into operator.Options by options().
type flags struct {
	metricsAddr, probeAddr, leaderElectionNS, operatorNamespace string
	leaderElect                                                 bool
	branchBufferMaxSize, additionalSensitive                    string
	targetResync                                                time.Duration
}

func defaultFlags() flags {
	ns := os.Getenv("POD_NAMESPACE")
	if ns == "" {
		ns = "gitops-reverser"
	}
	return flags{metricsAddr: ":8080", probeAddr: ":8081", leaderElect: true, operatorNamespace: ns,
		branchBufferMaxSize: "8Mi", targetResync: 30 * time.Second}
}

func (f *flags) bind(fs *flag.FlagSet) {
	fs.StringVar(&f.metricsAddr, "metrics-bind-address", f.metricsAddr, "Address the metrics endpoint binds to; 0 disables it.")
	fs.StringVar(&f.probeAddr, "health-probe-bind-address", f.probeAddr, "Address of /healthz and /readyz; 0 disables them.")
	fs.BoolVar(&f.leaderElect, "leader-elect", f.leaderElect, "Elect a leader, so exactly one replica mirrors.")
	fs.StringVar(&f.leaderElectionNS, "leader-election-namespace", f.leaderElectionNS, "Namespace of the leader Lease (default: --operator-namespace).")
	fs.StringVar(&f.operatorNamespace, "operator-namespace", f.operatorNamespace, "Namespace of remote kubeconfig Secrets (default $POD_NAMESPACE).")
	fs.StringVar(&f.branchBufferMaxSize, "branch-buffer-max-size", f.branchBufferMaxSize, "A commit window closes once its writes hold this much YAML.")
	fs.StringVar(&f.additionalSensitive, "additional-sensitive-resources", f.additionalSensitive,
		"Comma-separated resource.group names (e.g. sealedsecrets.bitnami.com) written only encrypted, besides core Secrets.")
	fs.DurationVar(&f.targetResync, "target-resync-interval", f.targetResync, "How often a healthy GitTarget is checked again.")
}

func (f flags) options() (operator.Options, error) {
	q, err := resource.ParseQuantity(f.branchBufferMaxSize)
	if err != nil {
		return operator.Options{}, fmt.Errorf("--branch-buffer-max-size %q: %w", f.branchBufferMaxSize, err)
	}
	var sensitive []schema.GroupResource
	for _, s := range strings.Split(f.additionalSensitive, ",") {
		if s = strings.TrimSpace(s); s != "" {
			sensitive = append(sensitive, schema.ParseGroupResource(s))
		}
	}
	return operator.Options{
		MetricsAddr: f.metricsAddr, ProbeAddr: f.probeAddr, LeaderElect: f.leaderElect,
		LeaderElectionNamespace: f.leaderElectionNS, OperatorNamespace: f.operatorNamespace,
		BufferMax: int(q.Value()), AdditionalSensitive: sensitive, TargetResync: f.targetResync,
		RecoverPanic: true,
	}, nil
}
