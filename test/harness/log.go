package harness

import (
	"os"

	"go.uber.org/zap/zapcore"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// SetLogger sets controller-runtime's logger for an operator run in
// process: development-mode zap, quiet (errors only) unless the
// environment variable envVar is "debug".
func SetLogger(envVar string) {
	level := zapcore.ErrorLevel
	if os.Getenv(envVar) == "debug" {
		level = zapcore.DebugLevel
	}
	logf.SetLogger(zap.New(zap.UseDevMode(true), zap.Level(level)))
}
