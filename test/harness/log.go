package harness

import (
	"bytes"
	"io"
	"os"
	"sync"

	uberzap "go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// SetLogger sets controller-runtime's logger for an operator run in
// process: development-mode zap, quiet (errors only) unless the
// environment variable envVar is "debug".
func SetLogger(envVar string) {
	logf.SetLogger(zap.New(zap.UseDevMode(true), zap.Level(consoleLevel(envVar))))
}

// SetLoggerCapturing is SetLogger, and also writes every log line, debug
// level included, to capture (which must be safe for concurrent writes),
// so a test can read what the operator logged.
func SetLoggerCapturing(envVar string, capture io.Writer) {
	captured := zapcore.NewCore(zapcore.NewJSONEncoder(uberzap.NewProductionEncoderConfig()),
		zapcore.AddSync(capture), zapcore.DebugLevel)
	level := uberzap.NewAtomicLevelAt(zapcore.DebugLevel) // the tee's own levels decide
	console := consoleLevel(envVar)
	logf.SetLogger(zap.New(zap.UseDevMode(true), zap.Level(level),
		zap.RawZapOpts(uberzap.WrapCore(func(c zapcore.Core) zapcore.Core {
			quiet, err := zapcore.NewIncreaseLevelCore(c, console)
			if err != nil { // console is below debug: cannot happen
				quiet = c
			}
			return zapcore.NewTee(quiet, captured)
		}))))
}

func consoleLevel(envVar string) zapcore.Level {
	if os.Getenv(envVar) == "debug" {
		return zapcore.DebugLevel
	}
	return zapcore.ErrorLevel
}

// SyncBuffer is a bytes.Buffer that is safe to write from several
// goroutines and read while they write (a log, a command's output).
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
