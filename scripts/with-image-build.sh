#!/usr/bin/env bash
# Runs a command (the test run) while the container image builds in the background
# (scripts/image.sh, output in .cache/image-build.log), so that the two overlap: the
# suites that need the image wait for that build (test/support/suite-order.ts). The build is stopped
# if it is still going when the command ends.
# Usage: scripts/with-image-build.sh <command...>
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .cache
# Its own process group, so that stopping it stops podman and mmdebstrap too; at the tests'
# priority: the node VM's suite, which starts first, waits for it.
setsid scripts/image.sh >.cache/image-build.log 2>&1 &
build=$!
trap 'kill -- -"$build" 2>/dev/null || true' EXIT
"$@"
