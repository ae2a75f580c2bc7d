#!/usr/bin/env bash
# Fetches the protos the agent's CSI services speak (src/runtime/csi) from the Go module
# proxy into protos/ (not in git; the image copies it): the CSI spec's csi.proto and
# kubelet's plugin registration API, at the versions below (kubelet's is the tests'
# Kubernetes, from control-plane/go.mod). A later run with the same versions does nothing.
# Needs Go, as scripts/control-plane.sh does.
#
#   scripts/protos.sh      # fetch if needed, print the directory
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
csi_spec=v1.13.0
kubernetes="$(sed -n 's#^\tk8s.io/kubernetes v1\.\(.*\)$#\1#p' "$root/control-plane/go.mod")"
kubelet="v0.$kubernetes"
out="$root/protos"
stamp="csi $csi_spec, kubelet $kubelet"
if [ -f "$out/VERSIONS" ] && [ "$(cat "$out/VERSIONS")" = "$stamp" ]; then
  echo "$out"
  exit 0
fi
command -v go >/dev/null || { echo "protos.sh: Go is needed to fetch the CSI protos from the Go module proxy (see README, 'What a contributor's machine needs')" >&2; exit 1; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# Outside any module: nothing of the repository's go.mod or go.sum changes.
dir() { (cd "$tmp" && GOFLAGS= go mod download -json "$1" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p'); }
spec="$(dir "github.com/container-storage-interface/spec@$csi_spec")"
registration="$(dir "k8s.io/kubelet@$kubelet")"
mkdir -p "$tmp/protos/csi" "$tmp/protos/pluginregistration"
cp "$spec/csi.proto" "$tmp/protos/csi/csi.proto"
cp "$registration/pkg/apis/pluginregistration/v1/api.proto" "$tmp/protos/pluginregistration/api.proto"
echo "$stamp" > "$tmp/protos/VERSIONS"
chmod -R u+w,go+r "$tmp/protos"
rm -rf "$out"
mv "$tmp/protos" "$out"
echo "$out"
