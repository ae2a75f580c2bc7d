#!/bin/bash
# Discards (TRIMs) every block of a device; on SSDs and thin devices the data
# then reads back as zeros or is unrecoverable.
# Usage: LOCAL_PV_BLKDEVICE=/dev/sdX blkdiscard.sh [extra blkdiscard options]
set -euo pipefail
. "$(dirname "$0")/common.sh"

if [ "${1:-}" = "-h" ]; then
  echo "Usage: $(basename "$0") [blkdiscard options]"
  echo "Runs blkdiscard -v on \$LOCAL_PV_BLKDEVICE."
  exit 0
fi
validateBlockDevice

echo "Calling blkdiscard on $LOCAL_PV_BLKDEVICE"
blkdiscard "$@" -v "$LOCAL_PV_BLKDEVICE"
