#!/usr/bin/env bash
# Builds the tests' Kubernetes control plane (control-plane/: etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler) and the node VM's kubelet from the Go module
# proxy with the plain `go` command, into a cache directory keyed by what goes into it,
# and prints that directory.
# Beside the binaries, in crds/, the Prometheus operator's own ServiceMonitor and
# PrometheusRule CRDs (from its module on the proxy), which the construct's objects meet.
# A later run with the same sources prints it at once. Needs Go (go.mod says which).
#
#   scripts/control-plane.sh            # build if needed, print the bin directory
#   LVP_CACHE_DIR=/somewhere scripts/control-plane.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
src="$root/control-plane"
version="$(sed -n 's#^\tk8s.io/kubernetes v\(.*\)$#\1#p' "$src/go.mod")"
minor="$(echo "$version" | cut -d. -f2)"
prometheus_operator=v0.85.0
key="$(cat "$src/go.mod" "$src/go.sum" "$src"/cmd/*/main.go "$0" | sha256sum | cut -c1-16)"
out="${LVP_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/local-volume-provisioner}/control-plane/v$version-$key"
if [ -x "$out/kube-apiserver" ] && [ -x "$out/etcd" ] && [ -x "$out/kube-controller-manager" ] && [ -x "$out/kube-scheduler" ] && [ -x "$out/kubelet" ] && [ -d "$out/crds" ]; then
  echo "$out"
  exit 0
fi
command -v go >/dev/null || { echo "control-plane.sh: Go is needed to build the tests' control plane (see README, 'What a contributor's machine needs')" >&2; exit 1; }
started=$(date +%s)
echo "control-plane.sh: building Kubernetes v$version (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubelet) into $out" >&2
tmp="$out.tmp.$$"
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
# Without the version stamps the server says v0.0.0 and clients warn of skew.
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags="$ldflags -X $pkg.gitVersion=v$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
done
(cd "$src" && GOFLAGS=-mod=readonly go build -trimpath -ldflags "$ldflags" -o "$tmp/" ./cmd/...)
operator="$(cd "$src" && go mod download -json "github.com/prometheus-operator/prometheus-operator@$prometheus_operator" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')"
mkdir "$tmp/crds"
for kind in servicemonitors prometheusrules; do
  cp "$operator/example/prometheus-operator-crd/monitoring.coreos.com_$kind.yaml" "$tmp/crds/"
done
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
echo "control-plane.sh: built in $(( $(date +%s) - started )) s" >&2
echo "$out"
