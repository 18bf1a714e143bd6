// Package harness starts the real components a user's cluster and forge
// have — etcd and kube-apiserver, Gitea, redis-server, and plain git
// remotes over smart HTTP and SSH — on loopback, for tests in any package.
//
// Binaries that do not come from the operating system are built from their Go
// modules by test/tools/build.sh and cached by version outside the
// repository; see BinaryPath. Each component is started by a Start function
// that returns a handle with a Stop method; tests normally share one instance
// per package from TestMain.
package harness
