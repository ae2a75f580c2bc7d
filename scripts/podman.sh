#!/usr/bin/env bash
# Runs podman (as root) with this project's settings, kept in private files instead
# of /etc/containers (see ../shared/reference/toolchain.md, "Container images"):
# - runc, not crun (crun 1.8 refuses a hybrid cgroup hierarchy), cgroupfs, file events;
# - default ulimits no higher than our own hard limits (podman's 1048576 fails
#   with "setrlimit ... Operation not permitted" where the hard limit is lower),
#   and nproc no higher than kernel.pid_max, to which podman lowers its own;
# - podman's default storage location, so a plain `podman push` sees the images;
#   overlay, or vfs where that location is itself on overlayfs.
# Usage: scripts/podman.sh <podman arguments...>
set -euo pipefail

conf_dir="$(cd "$(dirname "$0")/.." && pwd)/.cache/podman"
graphroot=/var/lib/containers/storage
mkdir -p "$conf_dir" "$graphroot"

hard_limit() { # ulimit flag [cap] -> a number podman accepts
  local v
  v="$(ulimit -H "$1")"
  [ "$v" = unlimited ] && v=1048576
  if [ -n "${2:-}" ] && [ "$2" -lt "$v" ]; then v="$2"; fi
  echo "$v"
}
nofile="$(hard_limit -n)"
nproc="$(hard_limit -u "$(cat /proc/sys/kernel/pid_max)")"
driver=overlay
[ "$(stat -f -c %T "$graphroot")" = overlayfs ] && driver=vfs

# Written to a temporary name and renamed, so a concurrent run never reads half a file.
write() { # file, content
  printf '%s\n' "$2" >"$1.$$" && mv -f "$1.$$" "$1"
}
write "$conf_dir/containers.conf" "[containers]
default_ulimits = [\"nofile=$nofile:$nofile\", \"nproc=$nproc:$nproc\"]

[engine]
runtime = \"runc\"
cgroup_manager = \"cgroupfs\"
events_logger = \"file\""
write "$conf_dir/storage.conf" "[storage]
driver = \"$driver\"
graphroot = \"$graphroot\"
runroot = \"/run/containers/storage\""

export CONTAINERS_CONF="$conf_dir/containers.conf"
export CONTAINERS_STORAGE_CONF="$conf_dir/storage.conf"
exec podman "$@"
