#!/bin/bash
# Removes every child of a directory (a filesystem volume), keeping the directory.
# Never follows symlinks and never crosses into another filesystem: a mount point
# inside the volume is refused, not emptied (unmounting it is not ours to do).
# Usage: fsclean.sh [DIR]   (default: $LOCAL_PV_FILESYSTEM, as upstream's Job sets it)
set -euo pipefail

if [ "${1:-}" = "-h" ]; then
  echo "Usage: $(basename "$0") [directory]"
  echo "Removes the children of the directory (default \$LOCAL_PV_FILESYSTEM)."
  exit 0
fi
dir="${1:-${LOCAL_PV_FILESYSTEM:-}}"
if [ -z "$dir" ]; then
  echo "no directory given and LOCAL_PV_FILESYSTEM is not set; refusing to run" >&2
  exit 1
fi
if [ -L "$dir" ] || [ ! -d "$dir" ]; then
  echo "\"$dir\" is not a directory; refusing to clean it" >&2
  exit 1
fi
real="$(realpath "$dir")"
if [ "$real" = "/" ]; then
  echo "refusing to clean /" >&2
  exit 1
fi

# Mount points strictly inside the volume (field 5 of mountinfo, octal escapes decoded).
nested="$(awk -v d="$real/" '{ p = $5; gsub(/\\040/, " ", p); if (index(p, d) == 1) print p }' /proc/self/mountinfo)"
if [ -n "$nested" ]; then
  echo "\"$dir\" has mount points inside it; unmount them first:" >&2
  echo "$nested" >&2
  exit 1
fi

echo "Removing the contents of $dir"
# -P: never follow symlinks; -xdev: stay on this filesystem; -depth: children first.
# Read-only directories are opened up first so their entries can be removed.
find -P "$real" -xdev -mindepth 1 -type d ! -perm -u=rwx -exec chmod u+rwx {} +
find -P "$real" -xdev -mindepth 1 -depth -delete
echo "Removed the contents of $dir"
