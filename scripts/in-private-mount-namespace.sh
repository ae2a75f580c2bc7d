#!/usr/bin/env bash
# Runs a command in a private mount namespace when we are root, so that every bind
# mount and loop-device mount a test makes disappears with the test run, even when
# the run is killed. Elsewhere it runs the command as it is; the privileged tests
# then skip locally and fail in CI (see test/support/privileged.ts).
set -euo pipefail
if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null 2>&1 && [ -z "${LVP_IN_PRIVATE_MOUNT_NS:-}" ]; then
  export LVP_IN_PRIVATE_MOUNT_NS=1
  exec unshare --mount --propagation private -- "$@"
fi
exec "$@"
