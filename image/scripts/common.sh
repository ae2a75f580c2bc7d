#!/bin/bash
# Shared checks for the cleaner scripts. Each script refuses a target that is not
# what it expects, before it writes anything.

# Exits unless $LOCAL_PV_BLKDEVICE names a block device (a symlink to one is fine).
validateBlockDevice() {
  if [ -z "${LOCAL_PV_BLKDEVICE:-}" ]; then
    echo "LOCAL_PV_BLKDEVICE is not set; refusing to run" >&2
    exit 1
  fi
  if [ ! -b "$LOCAL_PV_BLKDEVICE" ]; then
    echo "\"$LOCAL_PV_BLKDEVICE\" is not a block device; refusing to clean it" >&2
    exit 1
  fi
}
