#!/usr/bin/env bash
# Builds the tests' node VM (node-vm/) from Debian's packages and the Go module proxy, into
# a cache directory keyed by what goes into it, and prints that directory:
#   vmlinuz, initrd.img  Debian's kernel (linux-image-amd64 of bookworm-backports) and a small busybox initramfs
#                        that loads the root disk's modules (virtio, ext4) and hands over;
#   rootfs.raw           a Debian bookworm root filesystem (mmdebstrap) with systemd,
#                        Debian's containerd and runc, the CNI plugins, the storage tools
#                        (btrfs-progs from backports: simple quotas need 6.7 or later),
#                        the kernel's modules (filesystems, device-mapper, net, virtio),
#                        and node-vm/guest/ on top; the kubelet and the run's credentials
#                        come at boot from a 9p share (test/support/node-vm.ts);
#   pause.tar, tenant.tar  the pods' pause image (node-vm/pause) and a busybox tenant (with node-vm/chproj)
#                        image, as docker archives (no registry is reachable);
#   versions             what was built: the kernel, containerd, runc.
# A later run with the same inputs prints it at once. Needs root, mmdebstrap, depmod
# (kmod), xz, podman and Go.
#
#   scripts/node-vm.sh            # build if needed, print the directory
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
key="$(cd "$root" && { cat "$0"; find node-vm -type f | sort | while read -r f; do echo "$f"; cat "$f"; done; } | sha256sum | cut -c1-16)"
out="${LVP_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/local-volume-provisioner}/node-vm/$key"
if [ -f "$out/versions" ]; then
  echo "$out"
  exit 0
fi
for tool in mmdebstrap depmod xz podman go; do
  command -v "$tool" >/dev/null || { echo "node-vm.sh: $tool is needed to build the node VM (README, 'Run the tests')" >&2; exit 1; }
done
started=$(date +%s)
echo "node-vm.sh: building the node VM into $out" >&2
tmp="$out.tmp.$$"
rm -rf "$tmp"
mkdir -p "$tmp/work"
trap 'rm -rf "$tmp"' EXIT
work="$tmp/work"

# This machine's Debian mirror, or Debian's own.
mirror="$(cat /etc/apt/sources.list /etc/apt/sources.list.d/* 2>/dev/null | grep -oE 'https?://[^ ]*/debian/?( |$)' | head -n 1 | tr -d ' ' || true)"
mirror="${mirror:-http://deb.debian.org/debian}"

# Debian's kernel from bookworm-backports (6.12: btrfs pool classes need simple quotas,
# Linux 6.7+), asked of the mirror with an apt state of the build's own, so this machine's
# sources need not list backports. The metapackage names the versioned package; its modules
# need depmod (the package's postinst would run it).
(cd "$work" && apt-get download -q busybox-static >/dev/null)
mkdir -p "$work/apt/lists/partial" "$work/apt/cache/archives/partial"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror bookworm-backports main" > "$work/apt/sources.list"
backports=(-o Dir::Etc::SourceList="$work/apt/sources.list" -o Dir::Etc::SourceParts=/nonexistent
  -o Dir::State::Lists="$work/apt/lists" -o Dir::Cache="$work/apt/cache" -o Acquire::Languages=none -o APT::Sandbox::User=root)
apt-get "${backports[@]}" update -qq >/dev/null
(cd "$work" && apt-get "${backports[@]}" download -qq linux-image-amd64 >/dev/null)
kernel_package="$(dpkg-deb -f "$work"/linux-image-amd64_*.deb Depends | awk '{print $1}')"
(cd "$work" && apt-get "${backports[@]}" download -qq "$kernel_package" >/dev/null)
dpkg-deb -x "$work"/linux-image-6*.deb "$work/kernel"
dpkg-deb -x "$work"/busybox-static_*.deb "$work/busybox"
kver="$(ls "$work/kernel/lib/modules")"
depmod -b "$work/kernel" "$kver"
cp "$work/kernel/boot/vmlinuz-$kver" "$tmp/vmlinuz"

# The initramfs: busybox, the modules /dev/vda needs (with their dependencies, in order), and init.
initramfs="$work/initramfs"
mkdir -p "$initramfs"/{bin,dev,proc,sys,newroot,modules}
cp "$work/busybox/bin/busybox" "$initramfs/bin/"
install -m 0755 "$root/node-vm/initramfs/init" "$initramfs/init"
for module in virtio_pci virtio_blk ext4; do
  modprobe -d "$work/kernel" -S "$kver" --show-depends "$module" | awk '$1 == "insmod" { print $2 }'
done | awk '!seen[$0]++' | while read -r ko; do
  # Debian compresses its modules with xz; busybox's insmod loads them plain.
  plain="$(basename "$ko" .xz)"
  case "$ko" in
    *.ko.xz) xz -dc "$ko" > "$initramfs/modules/$plain" ;;
    *.ko) cp "$ko" "$initramfs/modules/" ;;
    *) echo "node-vm.sh: $ko is compressed in a way the initramfs cannot load" >&2; exit 1 ;;
  esac
  echo "$plain" >> "$initramfs/modules/order"
done
(cd "$initramfs" && find . | "$work/busybox/bin/busybox" cpio -o -H newc 2>/dev/null | gzip -1) > "$tmp/initrd.img"

# The root filesystem, from this machine's Debian mirror.
rootfs="$work/rootfs"
nice mmdebstrap --quiet --variant=minbase --mode=root --format=directory \
  --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/info/*' \
  --aptopt='Acquire::Languages "none"' \
  --include=systemd-sysv,udev,dbus,kmod,containerd,runc,containernetworking-plugins,iptables,iproute2,util-linux,mount,e2fsprogs,xfsprogs,lvm2,thin-provisioning-tools,quota,ca-certificates,conntrack,socat,ethtool,procps,openssh-server \
  --include=btrfs-progs/bookworm-backports \
  --customize-hook='rm -f "$1"/var/cache/apt/archives/*.deb "$1"/var/lib/apt/lists/*_Packages*' \
  bookworm "$rootfs" "deb $mirror bookworm main" "deb $mirror bookworm-backports main"

# The kernel's modules but for hardware a VM never has: about 90 MB of its 390.
modules="$rootfs/usr/lib/modules/$kver"
from="$work/kernel/lib/modules/$kver"
mkdir -p "$modules/kernel/drivers/net"
cp -a "$from"/modules.builtin* "$from/modules.order" "$modules/"
for d in arch block crypto fs lib mm net virt; do cp -a "$from/kernel/$d" "$modules/kernel/"; done
for d in block char md virtio; do cp -a "$from/kernel/drivers/$d" "$modules/kernel/drivers/"; done
cp -a "$from"/kernel/drivers/net/*.ko* "$modules/kernel/drivers/net/"
rm -rf "$modules"/kernel/net/{wireless,mac80211,bluetooth}
depmod -b "$rootfs" "$kver"

cp -a "$root/node-vm/guest/." "$rootfs/"
echo '/dev/vda / ext4 defaults,noatime 0 0' > "$rootfs/etc/fstab"
rm -f "$rootfs/etc/resolv.conf"
echo 'nameserver 10.0.2.3' > "$rootfs/etc/resolv.conf"
chroot "$rootfs" systemctl enable systemd-networkd lvp-setup lvp-images kubelet containerd ssh >/dev/null 2>&1
chroot "$rootfs" systemctl disable apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer e2scrub_reap.service fstrim.timer >/dev/null 2>&1 || true
chroot "$rootfs" systemctl mask systemd-networkd-wait-online.service >/dev/null 2>&1
# Each boot of a copy is a machine of its own.
: > "$rootfs/etc/machine-id"
versions="kernel $kver
containerd $(chroot "$rootfs" containerd --version | awk '{print $3}')
runc $(chroot "$rootfs" runc --version | awk 'NR == 1 {print $3}')"
truncate -s 6G "$tmp/rootfs.raw"
mkfs.ext4 -q -L lvp-node -d "$rootfs" "$tmp/rootfs.raw"

# The pods' images: the pause image from node-vm/pause, and busybox as a tenant's image.
images="$work/images"
mkdir -p "$images/pause" "$images/tenant/root/bin" "$images/tenant/root/tmp"
(cd "$root/node-vm/pause" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags '-s -w' -o "$images/pause/pause" .)
printf 'FROM scratch\nCOPY pause /pause\nUSER 65535:65535\nENTRYPOINT ["/pause"]\n' > "$images/pause/Containerfile"
cp "$work/busybox/bin/busybox" "$images/tenant/root/bin/"
# What a tenant's own chattr -p does, which busybox lacks: node-vm/chproj.
(cd "$root/node-vm/chproj" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags '-s -w' -o "$images/tenant/root/bin/chproj" .)
for applet in $("$work/busybox/bin/busybox" --list); do
  [ "$applet" = busybox ] || ln -s busybox "$images/tenant/root/bin/$applet"
done
printf 'FROM scratch\nCOPY root/ /\nENV PATH=/bin\nCMD ["sleep", "3600"]\n' > "$images/tenant/Containerfile"
"$root/scripts/podman.sh" build -q --pull=never -t registry.k8s.io/pause:3.10 "$images/pause" >/dev/null
"$root/scripts/podman.sh" build -q --pull=never -t localhost/lvp-tenant:1 "$images/tenant" >/dev/null
"$root/scripts/podman.sh" save -q --format docker-archive -o "$tmp/pause.tar" registry.k8s.io/pause:3.10
"$root/scripts/podman.sh" save -q --format docker-archive -o "$tmp/tenant.tar" localhost/lvp-tenant:1

rm -rf "$work"
echo "$versions" > "$tmp/versions"
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
echo "node-vm.sh: built in $(( $(date +%s) - started )) s ($(echo "$versions" | tr '\n' ' '))" >&2
echo "$out"
