// Command gitops-reverser runs the operator: flags → options → wiring.
package main

import (
	"flag"
	"fmt"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/configbutler/gitops-reverser/internal/operator"
)

func main() {
	f := defaultFlags()
	f.bind(flag.CommandLine)
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))

	opts, err := f.options()
	if err == nil {
		opts.Config, err = ctrl.GetConfig()
	}
	if err == nil {
		ctrl.Log.Info("starting gitops-reverser")
		err = operator.Run(ctrl.SetupSignalHandler(), opts)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gitops-reverser:", err)
		os.Exit(1)
	}
}
