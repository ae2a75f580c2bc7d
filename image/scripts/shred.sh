#!/bin/bash
# Overwrites a whole block device N times with random data, then once with zeros.
# Usage: LOCAL_PV_BLKDEVICE=/dev/sdX shred.sh N
set -euo pipefail
. "$(dirname "$0")/common.sh"

if [ "${1:-}" = "-h" ] || [ $# -ne 1 ]; then
  echo "Usage: $(basename "$0") <number of passes>"
  echo "Runs shred -vzf -n <passes> on \$LOCAL_PV_BLKDEVICE."
  [ "${1:-}" = "-h" ] && exit 0
  exit 1
fi
case "$1" in
  ''|*[!0-9]*) echo "number of passes \"$1\" is not a whole number" >&2; exit 1 ;;
esac
validateBlockDevice

echo "Calling shred -vzf -n $1 on $LOCAL_PV_BLKDEVICE"
shred -vzf -n "$1" "$LOCAL_PV_BLKDEVICE"
