#!/bin/bash
# Writes zeros over a whole block device.
# Usage: LOCAL_PV_BLKDEVICE=/dev/sdX dd_zero.sh
set -euo pipefail
. "$(dirname "$0")/common.sh"

if [ "${1:-}" = "-h" ]; then
  echo "Usage: $(basename "$0")"
  echo "Zeroes all of \$LOCAL_PV_BLKDEVICE with dd."
  exit 0
fi
validateBlockDevice

echo "Zeroing $LOCAL_PV_BLKDEVICE"
# dd stops with "No space left on device" at the end of the device: that is success.
# Anything else is a failure.
if ! out=$(dd if=/dev/zero of="$LOCAL_PV_BLKDEVICE" bs=1M oflag=direct conv=fsync 2>&1); then
  if ! grep -q "No space left on device" <<<"$out"; then
    echo "$out" >&2
    exit 1
  fi
fi
echo "$out"
sync
echo "Zeroed $LOCAL_PV_BLKDEVICE"
