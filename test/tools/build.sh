#!/usr/bin/env bash
# Builds the real components the test harness runs (kube-apiserver, etcd,
# Gitea, and the sops CLI the encryption tests decrypt with) from their Go
# modules and caches them by version outside the
# repository, so only the first run on a machine pays for the build.
#
#   test/tools/build.sh [kube-apiserver|etcd|gitea|sops ...]   (default: all)
#
# Prints nothing but progress; the harness finds the binaries through
# test/harness.BinaryPath, which uses the same cache layout.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache=${GITOPS_REVERSER_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gitops-reverser/tools}

KUBE_VERSION=v1.37.2
ETCD_VERSION=v3.7.3
GITEA_VERSION=v1.27.3
SOPS_VERSION=v3.13.3

export GONOSUMDB=${GONOSUMDB:+$GONOSUMDB,}code.gitea.io/sdk,gitea.dev
export GOFLAGS=${GOFLAGS:--buildvcs=false}

# build NAME VERSION MODULE_DIR PACKAGE LDFLAGS
# Several builds of one binary may start at once (make test-binaries and a
# test package's harness on demand): a lock per binary makes the later ones
# wait for the first and then find it cached, instead of building it twice
# and racing on the temporary file.
build() {
	local name=$1 version=$2 dir=$3 pkg=$4 ldflags=$5
	local dest="$cache/$name-$version"
	mkdir -p "$dest"
	local lock
	exec {lock}>"$dest/.build.lock"
	flock "$lock"
	if [ -x "$dest/$name" ]; then
		echo "$name $version: cached at $dest/$name"
		exec {lock}>&-
		return
	fi
	echo "$name $version: building (first run on this machine; this takes minutes)"
	local start=$SECONDS
	(cd "$here/$dir" && go build -trimpath -ldflags "$ldflags" -o "$dest/$name.tmp" "$pkg")
	mv "$dest/$name.tmp" "$dest/$name"
	exec {lock}>&-
	echo "$name $version: built in $((SECONDS - start))s"
}

kube_apiserver() {
	local minor=${KUBE_VERSION#v1.}
	minor=${minor%%.*}
	local ld="-s -w"
	for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		ld+=" -X $p.gitVersion=$KUBE_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor"
	done
	build kube-apiserver "$KUBE_VERSION" kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver "$ld"
}

etcd() {
	build etcd "$ETCD_VERSION" etcd go.etcd.io/etcd/server/v3 \
		"-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=release"
}

gitea() {
	local dest="$cache/gitea-$GITEA_VERSION"
	build gitea "$GITEA_VERSION" gitea gitea.dev "-s -w -X main.Version=${GITEA_VERSION#v}"
	# Without generated bindata Gitea reads options/, templates/ and public/
	# from STATIC_ROOT_PATH; copy them from the module source once.
	if [ ! -d "$dest/static/options" ]; then
		local src
		src=$(cd "$here/gitea" && go list -m -f '{{.Dir}}' gitea.dev)
		mkdir -p "$dest/static.tmp"
		cp -r "$src/options" "$src/templates" "$src/public" "$dest/static.tmp/"
		chmod -R u+w "$dest/static.tmp"
		rm -rf "$dest/static" && mv "$dest/static.tmp" "$dest/static"
	fi
}

sops_cli() {
	build sops "$SOPS_VERSION" sops github.com/getsops/sops/v3/cmd/sops "-s -w"
}

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(etcd kube-apiserver gitea sops)
for t in "${targets[@]}"; do
	case $t in
	kube-apiserver) kube_apiserver ;;
	etcd) etcd ;;
	gitea) gitea ;;
	sops) sops_cli ;;
	*) echo "unknown component: $t" >&2; exit 2 ;;
	esac
done
