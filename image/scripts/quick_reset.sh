#!/bin/bash
# Quickly resets a block device: a new filesystem overwrites the old one's
# metadata, then every signature is erased so kubelet sees a blank device.
# Usage: LOCAL_PV_BLKDEVICE=/dev/sdX quick_reset.sh
set -euo pipefail
. "$(dirname "$0")/common.sh"

if [ "${1:-}" = "-h" ]; then
  echo "Usage: $(basename "$0")"
  echo "Makes a filesystem on \$LOCAL_PV_BLKDEVICE, then erases all its signatures (wipefs -a)."
  exit 0
fi
validateBlockDevice

echo "Calling mkfs on $LOCAL_PV_BLKDEVICE"
mkfs -t ext4 -F -q "$LOCAL_PV_BLKDEVICE"
echo "Calling wipefs on $LOCAL_PV_BLKDEVICE"
wipefs -a "$LOCAL_PV_BLKDEVICE"
echo "Quick reset of $LOCAL_PV_BLKDEVICE done"
