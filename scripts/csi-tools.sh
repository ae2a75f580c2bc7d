#!/usr/bin/env bash
# Builds the CSI tools the tests run beside the agent (csi-tools/: the upstream snapshot
# controller and csi-sanity) from the Go module proxy with the plain `go` command, into a
# cache directory keyed by what goes into it, and prints that directory. Beside the
# binaries, in crds/, the snapshot CRDs (group snapshots' too: the controller watches them)
# from the snapshotter's client module of the same release. A later run with the same sources prints it at once.
#
#   scripts/csi-tools.sh            # build if needed, print the directory
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
src="$root/csi-tools"
key="$(cat "$src/go.mod" "$src/go.sum" "$0" | sha256sum | cut -c1-16)"
out="${LVP_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/local-volume-provisioner}/csi-tools/$key"
if [ -x "$out/snapshot-controller" ] && [ -x "$out/csi-sanity" ] && [ -d "$out/crds" ]; then
  echo "$out"
  exit 0
fi
command -v go >/dev/null || { echo "csi-tools.sh: Go is needed to build the snapshot controller and csi-sanity (see README, 'What a contributor's machine needs')" >&2; exit 1; }
started=$(date +%s)
echo "csi-tools.sh: building the snapshot controller and csi-sanity into $out" >&2
tmp="$out.tmp.$$"
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
(cd "$src" && GOFLAGS=-mod=readonly go build -trimpath -ldflags "-s -w" -o "$tmp/" tool)
client="$(cd "$src" && go list -m -f '{{.Dir}}' github.com/kubernetes-csi/external-snapshotter/client/v8)"
mkdir "$tmp/crds"
cp "$client"/config/crd/*storage.k8s.io_*.yaml "$tmp/crds/"
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
echo "csi-tools.sh: built in $(( $(date +%s) - started )) s" >&2
echo "$out"
