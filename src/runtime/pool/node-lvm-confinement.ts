/**
 * Whether the node's LVM reads what tenants write. A tenant with a Block volume writes
 * its device's first sectors as it likes, an LVM label and volume group metadata
 * included, and kubelet maps every Block volume through a loop device the node's LVM
 * scans unless its configuration says otherwise (`scan_lvs = 0` keeps LVM off logical
 * volumes, not off those loops). A node that scans them lets the tenant's volume group
 * be listed beside the pool's (one named like it makes the pool's name ambiguous to
 * every LVM command that names it), and activated by udev at the next boot, where a
 * logical volume it names like a neighbour's takes the neighbour's /dev path, which
 * kubelet mounts.
 *
 * A node is confined when its LVM, asked with its own configuration, does not see a
 * physical volume on a loop device: a devices file listing only the node's own disks
 * (`lvmdevices --adddev`, `use_devicesfile = 1`), or a `global_filter` that accepts only
 * them. The answer is read from LVM itself, with a probe: a filter that rejects
 * `^/dev/loop` still lets LVM see the loop through `/dev/disk/by-diskseq/<n>`, so the
 * configuration's words are not read, its effect is. The probe is made again whenever
 * the node's LVM configuration changes.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { hostPath, lvm, runOnHost } from './host-command';

/** What the node's LVM reads: confined, or seeing what tenants write, with the way to confine it. */
export type NodeLvmConfinement = { readonly confined: true } | { readonly confined: false; readonly reason: string };

/** The node's LVM configuration files, whose change calls for a new probe. */
const CONFIGURATION = ['/etc/lvm/lvm.conf', '/etc/lvm/lvmlocal.conf', '/etc/lvm/devices'];

/** The recipe the docs give (docs/operations.md, "LVM thin"). */
const HOW = 'confine it to the node\'s own disks: "use_devicesfile = 1" in /etc/lvm/lvmlocal.conf (devices section), then "lvm lvmdevices --adddev <disk>" '
  + 'for each disk of the node\'s volume groups, or a global_filter that accepts only those disks and rejects everything else ("r|.*|" last)';

export class NodeLvmProbe {
  private last?: { readonly fingerprint: string; readonly answer: NodeLvmConfinement };

  /** The node's answer, probed again only when its LVM configuration changed since the last probe. */
  async confinement(): Promise<NodeLvmConfinement> {
    const fingerprint = configurationFingerprint();
    if (this.last?.fingerprint !== fingerprint) this.last = { fingerprint, answer: await probe() };
    return this.last.answer;
  }
}

/** Sizes and modification times of the node's LVM configuration (the devices file directory's entries too). */
function configurationFingerprint(): string {
  const stat = (p: string) => {
    const st = fs.statSync(hostPath(p), { throwIfNoEntry: false });
    return st ? `${p}:${st.size}:${st.mtimeMs}` : `${p}:-`;
  };
  const devices = hostPath('/etc/lvm/devices');
  const files = fs.existsSync(devices) ? fs.readdirSync(devices).map((f) => path.posix.join('/etc/lvm/devices', f)) : [];
  return [...CONFIGURATION, ...files].map(stat).join('\n');
}

/**
 * A physical volume on a loop device of a file in the node's /run, as a tenant's would be;
 * the node's LVM is asked for its physical volumes; the probe is removed whatever happens.
 */
async function probe(): Promise<NodeLvmConfinement> {
  const file = `/run/local-volume-provisioner-lvm-probe-${process.pid}`;
  fs.writeFileSync(hostPath(file), '');
  fs.truncateSync(hostPath(file), 4 * 1024 * 1024);
  let loop: string | undefined;
  try {
    loop = (await runOnHost('losetup', ['--find', '--show', file])).trim();
    // Only the probe is visible to these two: nothing else of the node is read or written.
    await lvm(['pvcreate', '--quiet', '--devices', loop, loop]);
    const uuid = (await lvm(['pvs', '--devices', loop, '--noheadings', '-o', 'pv_uuid'])).trim();
    const seen = JSON.parse(await lvm(['pvs', '--reportformat', 'json', '-o', 'pv_name,pv_uuid'])) as { report: Array<{ pv: Array<{ pv_name: string; pv_uuid: string }> }> };
    const as = seen.report.flatMap((r) => r.pv).find((pv) => pv.pv_uuid === uuid);
    if (!as) return { confined: true };
    return {
      confined: false,
      reason: `the node's LVM reads physical volumes on loop devices (it listed a probe on ${loop} as ${as.pv_name}), as kubelet maps every Block volume: `
        + `a tenant's volume group on its own device would be listed beside the node's, and activated at the next boot; ${HOW}`,
    };
  } finally {
    if (loop) await runOnHost('losetup', ['--detach', loop]).catch(() => undefined);
    fs.rmSync(hostPath(file), { force: true });
  }
}
