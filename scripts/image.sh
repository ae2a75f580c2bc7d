#!/usr/bin/env bash
# Builds image/Dockerfile, tagged as the construct's default image
# (src/constructs/image.ts: the repository and the package version).
# With docker when a docker engine answers; otherwise with podman (as root), whose
# base images scripts/image-base.sh pulls or makes first.
# Usage: scripts/image.sh   (`npx projen image`)
set -euo pipefail
cd "$(dirname "$0")/.."
# The CSI protos the agent loads at run time (protos/, copied into the image), fetched if missing.
scripts/protos.sh >/dev/null

tag="$(node -r ts-node/register/transpile-only -p 'require("./src/constructs/image").DEFAULT_IMAGE')"

if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
  exec docker build -f image/Dockerfile -t "$tag" .
fi

if [ "$(id -u)" != 0 ]; then
  echo "scripts/image.sh: no docker engine answers, and podman builds need root here; run it as root or with docker" >&2
  exit 1
fi

# One podman build at a time on this machine (its storage is shared): a second one
# waits here, then finds every layer built.
exec 9>"${TMPDIR:-/tmp}/local-volume-provisioner-image.lock"
flock 9

scripts/image-base.sh

# The build's `npm ci` must trust the registry as npm does here: npm reads its global
# config from /usr/local/etc/npmrc in the Node image, so a directory with that npmrc
# (and the CA file it names) is mounted there for the build only; nothing of it stays.
npm_etc="$(mktemp -d)"
trap 'rm -rf "$npm_etc"' EXIT
echo "registry=$(npm config get registry)" >"$npm_etc/npmrc"
for ca in "$(npm config get cafile)" "${NODE_EXTRA_CA_CERTS:-}"; do
  if [ -f "$ca" ]; then
    cat "$ca" >>"$npm_etc/ca.pem"
  fi
done
if [ -f "$npm_etc/ca.pem" ]; then
  echo "cafile=/usr/local/etc/ca.pem" >>"$npm_etc/npmrc"
fi

scripts/podman.sh build --pull=never --network host -v "$npm_etc:/usr/local/etc:ro" \
  -f image/Dockerfile -t "$tag" .
# Earlier builds' unnamed images (layers a later build may reuse) go after a week, so
# that a CI machine's storage does not grow without end.
scripts/podman.sh image prune --force --filter until=168h >/dev/null
echo "built $tag" >&2
