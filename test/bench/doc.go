// Package bench measures the core pipeline end to end: a real
// kube-apiserver (test/harness), a Git remote over smart HTTP, and the
// operator binary running as a separate process, so its peak RSS and CPU
// time are its own.
//
// The figures are Benchmark functions, run once each by `make bench`
// (-benchtime 1x); they report through b.ReportMetric and print a summary
// table at the end. `go test ./...` runs no benchmark and therefore starts
// nothing here. docs/benchmarks.md has the results and how to read them.
package bench
