package e2e

import (
	"os"

	"go.uber.org/zap/zapcore"
)

// zapLevel keeps test output quiet unless E2E_LOG=debug.
func zapLevel() zapcore.Level {
	if os.Getenv("E2E_LOG") == "debug" {
		return zapcore.DebugLevel
	}
	return zapcore.ErrorLevel
}
