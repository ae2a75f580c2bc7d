/**
 * A real node for the tests: a VM (qemu) booting Debian's kernel and a Debian root
 * filesystem with systemd, containerd and runc (scripts/node-vm.sh builds them, once per
 * machine), whose kubelet (Kubernetes' own, built with the control plane) registers with
 * the suite's control plane. It runs the images it is given (the project's image, built
 * with podman, imported with importImage) as real pods, with real mounts, on its own virtio disks.
 *
 * Networking stays on this machine: qemu's user networking, with only ssh and the kubelet
 * forwarded, to loopback ports. The VM reaches the apiserver at 10.0.2.2 (this machine's
 * loopback), and its pods through the kubernetes Service's address, which the VM routes
 * there (it runs no kube-proxy).
 *
 * KVM is used where a VM boots under it (probed once per machine boot: on some machines
 * /dev/kvm opens but guests hang), else TCG (software emulation).
 */
import { ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { CoreV1Api, V1Node } from '@kubernetes/client-node';
import { REPO } from './agent-process';
import { ControlPlane, freePort, HOST_FROM_NODE_VM, httpsGet } from './control-plane';
import { DEFAULT_IMAGE } from '../../src/constructs';

const MiB = 1024 * 1024;
/** Only against a hang: a VM under TCG on a busy machine has taken a minute to be Ready. */
const READY_TIMEOUT_MS = 6 * 60_000;
/** How long a KVM guest gets to reach its initramfs before KVM is taken not to work here. */
const KVM_PROBE_MS = 20_000;

/** The built VM (scripts/node-vm.sh): kernel, initramfs, root filesystem, pod images, versions. */
export function nodeVmImage(): string {
  return execFileSync(path.join(REPO, 'scripts/node-vm.sh'), { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
}

/**
 * The agent's image (scripts/image.sh, which waits for the test task's background build)
 * saved as a docker archive in `dir`, for the node's containerd.
 */
export async function agentImageArchive(dir: string): Promise<string> {
  const run = async (command: string, args: string[]) => {
    try {
      await promisify(execFile)(path.join(REPO, command), args, { cwd: REPO, maxBuffer: 256 * MiB });
    } catch (e) {
      const err = e as { stdout?: string; stderr?: string; message: string };
      throw new Error(`${command} failed: ${err.message}\n${`${err.stdout ?? ''}${err.stderr ?? ''}`.split('\n').slice(-60).join('\n')}`);
    }
  };
  await run('scripts/image.sh', []);
  const archive = path.join(dir, 'local-volume-provisioner.tar');
  await run('scripts/podman.sh', ['save', '-q', '--format', 'docker-archive', '-o', archive, DEFAULT_IMAGE]);
  return archive;
}

export type Accel = 'kvm' | 'tcg';

/**
 * Whether a VM boots under KVM on this machine: a guest started with `lvp.probe` says so
 * from its initramfs and powers off. Asked once per machine boot (the answer is kept
 * beside the VM image, by the kernel's boot id).
 */
export async function probeAccel(image: string): Promise<Accel> {
  const bootId = fs.readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  const known = path.join(image, `accel-${bootId}`);
  if (fs.existsSync(known)) return fs.readFileSync(known, 'utf8').trim() as Accel;
  let accel: Accel = 'tcg';
  try {
    fs.accessSync('/dev/kvm', fs.constants.R_OK | fs.constants.W_OK); // eslint-disable-line no-bitwise
    const out = await promisify(execFile)('timeout', ['--signal=KILL', String(KVM_PROBE_MS / 1000), 'qemu-system-x86_64',
      '-accel', 'kvm', '-cpu', 'host', '-m', '256', '-nodefaults', '-no-user-config', '-display', 'none', '-no-reboot',
      '-kernel', path.join(image, 'vmlinuz'), '-initrd', path.join(image, 'initrd.img'),
      '-append', 'console=ttyS0 lvp.probe panic=-1', '-serial', 'stdio'], { encoding: 'utf8', timeout: KVM_PROBE_MS + 5000 })
      .then((r) => r.stdout, (e: { stdout?: string }) => e.stdout ?? '');
    if (out.includes('lvp-probe-ok')) accel = 'kvm';
  } catch {
    // No usable /dev/kvm.
  }
  fs.writeFileSync(known, accel);
  return accel;
}

export interface NodeVmOptions {
  /** The Node's name (and the VM's host name). */
  readonly name: string;
  /** Raw virtio disks besides the root disk, /dev/vdb, /dev/vdc, ... in this order. */
  readonly disksMiB?: readonly number[];
  /** @default 1536 */
  readonly memoryMiB?: number;
}

/** What a boot cost, for the suite's report. */
export interface BootReport {
  readonly accel: Accel;
  /** From qemu's start to the Node's Ready condition. */
  readonly readyMs: number;
}

export class NodeVm {
  /** Builds the VM's disks and its share of settings, boots it, and waits until its Node is Ready. */
  static async boot(plane: ControlPlane, options: NodeVmOptions): Promise<NodeVm> {
    const image = nodeVmImage();
    const accel = await probeAccel(image);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), `lvp-node-${options.name}-`));
    const vm = new NodeVm(plane, options, image, accel, dir, await freePort(), await freePort());
    try {
      vm.prepare();
      await vm.start();
    } catch (e) {
      await vm.destroy();
      throw e;
    }
    return vm;
  }

  private qemu?: ChildProcess;
  private exited?: Promise<void>;
  /** The one ssh connection each command goes through: a handshake costs the VM seconds of CPU under TCG. */
  private sshMaster?: ChildProcess;
  private lastBoot?: BootReport;

  private constructor(
    private readonly plane: ControlPlane,
    readonly options: NodeVmOptions,
    private readonly image: string,
    readonly accel: Accel,
    /** The run's files: disks, the share, the console log. */
    readonly dir: string,
    private readonly sshPort: number,
    private readonly kubeletPort: number,
  ) {}

  get name(): string {
    return this.options.name;
  }

  /** The last boot's cost. */
  get boot(): BootReport {
    return this.lastBoot!;
  }

  /** Kernel, containerd and runc of the VM, and the kubelet's version. */
  versions(): string {
    return fs.readFileSync(path.join(this.image, 'versions'), 'utf8').trim();
  }

  /** The VM's serial console so far (the kernel's and the run's milestones). */
  console(): string {
    const file = path.join(this.dir, 'console.log');
    return fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
  }

  /** Runs a shell command as root in the VM; resolves to its output, rejects with it (and its exit code) on failure. */
  async ssh(command: string, timeoutMs = 120_000): Promise<string> {
    try {
      const { stdout } = await promisify(execFile)('ssh', [...this.sshArgs(), command], { encoding: 'utf8', timeout: timeoutMs, maxBuffer: 64 * MiB });
      return stdout;
    } catch (e) {
      const err = e as { stdout?: string; stderr?: string; code?: number; message: string };
      throw new Error(`in node ${this.name}: ${command} failed (${err.code ?? err.message}):\n${err.stdout ?? ''}${err.stderr ?? ''}`);
    }
  }

  /**
   * GETs `urlPath` of the node's kubelet (/metrics, /stats/summary...) at its port 10250, which qemu forwards to a loopback
   * port here, as the control plane's administrator (kubelet's webhook authorization asks the apiserver, which lets
   * system:masters do anything): what the apiserver's nodes/proxy would give, which does not reach the node here (it
   * looks the node's name up in DNS). Rejects unless kubelet answers 200.
   */
  async kubelet(urlPath: string, timeoutMs = 60_000): Promise<string> {
    const { cert, key } = this.plane.adminCredentials();
    // kubelet serves with the self-signed certificate it made at its first start, which no CA here vouches for; the port is this VM's.
    const { status, body } = await httpsGet(new URL(`https://127.0.0.1:${this.kubeletPort}${urlPath}`), { cert, key, rejectUnauthorized: false }, timeoutMs)
      .catch((e: Error) => { throw new Error(`kubelet of node ${this.name} did not answer ${urlPath}: ${e.message}`); });
    if (status !== 200) throw new Error(`kubelet of node ${this.name} answered ${urlPath} with ${status}: ${body}`);
    return body;
  }

  /**
   * Imports a docker archive into the node's containerd (Kubernetes' namespace), streamed through ssh: an image built
   * while the VM booted. It stays on the VM's disk across reboots.
   */
  async importImage(archive: string): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      const child = execFile('ssh', [...this.sshArgs(), 'ctr -n k8s.io images import --all-platforms -'], { encoding: 'utf8', timeout: READY_TIMEOUT_MS },
        (err, _stdout, stderr) => (err ? reject(new Error(`importing ${archive} into node ${this.name} failed: ${stderr || err.message}`)) : resolve()));
      fs.createReadStream(archive).pipe(child.stdin!);
    });
  }

  /** The node's disk `n` (1 = /dev/vdb) as the VM names it. */
  disk(n: number): string {
    return `/dev/vd${String.fromCharCode('a'.charCodeAt(0) + n)}`;
  }

  /**
   * Shuts the VM down (systemd's poweroff: its pods stopped, its filesystems unmounted) and starts it again, as a reboot does;
   * resolves to how long the shutdown took.
   */
  async reboot(): Promise<{ shutdownMs: number }> {
    const started = Date.now();
    await this.ssh('systemctl poweroff', 30_000).catch(() => undefined);
    await this.waitExit(READY_TIMEOUT_MS);
    const shutdownMs = Date.now() - started;
    this.stopSshMaster();
    await this.start();
    return { shutdownMs };
  }

  /** Stops the VM and removes its files. */
  async destroy(): Promise<void> {
    this.stopSshMaster();
    if (this.qemu && this.qemu.exitCode === null) {
      this.qemu.kill('SIGKILL');
      await this.exited;
    }
    fs.rmSync(this.dir, { recursive: true, force: true });
  }

  /** The root disk (a copy-on-write overlay of the built image), the data disks, and the share the VM reads its settings from. */
  private prepare(): void {
    const file = (name: string) => path.join(this.dir, name);
    execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', '-b', path.join(this.image, 'rootfs.raw'), '-F', 'raw', file('root.qcow2')]);
    (this.options.disksMiB ?? []).forEach((mib, i) => {
      fs.closeSync(fs.openSync(file(`disk${i + 1}.raw`), 'w'));
      fs.truncateSync(file(`disk${i + 1}.raw`), mib * MiB);
    });
    const share = file('share');
    fs.mkdirSync(path.join(share, 'kubelet-config'), { recursive: true });
    fs.mkdirSync(path.join(share, 'images'));
    fs.writeFileSync(path.join(share, 'hostname'), this.name);
    const kubelet = path.join(path.dirname(this.plane.binary('kube-apiserver')), 'kubelet');
    fs.copyFileSync(kubelet, path.join(share, 'kubelet'));
    const { cert, key, ca } = this.plane.nodeCredentials(this.name);
    const b64 = (pem: string) => Buffer.from(pem).toString('base64');
    fs.writeFileSync(path.join(share, 'kubelet-config', 'ca.crt'), ca);
    fs.writeFileSync(path.join(share, 'kubelet-config', 'kubeconfig'), [
      'apiVersion: v1',
      'kind: Config',
      `clusters: [{name: test, cluster: {server: "https://${HOST_FROM_NODE_VM}:${this.plane.port}", certificate-authority-data: ${b64(ca)}}}]`,
      `users: [{name: kubelet, user: {client-certificate-data: ${b64(cert)}, client-key-data: ${b64(key)}}}]`,
      'contexts: [{name: test, context: {cluster: test, user: kubelet}}]',
      'current-context: test',
      '',
    ].join('\n'));
    fs.writeFileSync(path.join(share, 'kubelet.env'), `KUBELET_ARGS=--hostname-override=${this.name} --volume-stats-agg-period=10s\n`);
    fs.writeFileSync(path.join(share, 'apiserver'), `${HOST_FROM_NODE_VM}:${this.plane.port}\n`);
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', file('id_ed25519')]);
    fs.copyFileSync(file('id_ed25519.pub'), path.join(share, 'authorized_keys'));
    for (const archive of [path.join(this.image, 'pause.tar'), path.join(this.image, 'tenant.tar')]) {
      fs.copyFileSync(archive, path.join(share, 'images', path.basename(archive)));
    }
    this.plane.routeKubelet(this.name, this.kubeletPort);
  }

  /** Starts qemu on the VM's disks and waits until its Node is Ready and ssh answers. */
  private async start(): Promise<void> {
    const file = (name: string) => path.join(this.dir, name);
    // TCG's translation cache at 1 GiB (qemu's own default on a 64-bit host): a full cache is flushed and all of it translated
    // again, and the guest runs much code (kubelet, containerd, runc, two Node.js agents).
    const accel = this.accel === 'kvm' ? ['-accel', 'kvm', '-cpu', 'host'] : ['-accel', 'tcg,thread=multi,tb-size=1024', '-cpu', 'max'];
    const disks = (this.options.disksMiB ?? []).flatMap((_, i) => ['-drive', `file=${file(`disk${i + 1}.raw`)},if=virtio,format=raw,cache=unsafe`]);
    const started = Date.now();
    fs.writeFileSync(file('console.log'), '');
    const qemuArgs = [
      ...accel, '-m', String(this.options.memoryMiB ?? 1536), '-smp', '2', '-nodefaults', '-no-user-config', '-display', 'none', '-no-reboot',
      '-kernel', path.join(this.image, 'vmlinuz'), '-initrd', path.join(this.image, 'initrd.img'),
      '-append', 'console=ttyS0 root=/dev/vda rw panic=-1 systemd.unified_cgroup_hierarchy=1',
      '-drive', `file=${file('root.qcow2')},if=virtio,format=qcow2,cache=unsafe`,
      ...disks,
      // Loopback only: nothing in the VM can reach beyond this machine, and only ssh and the kubelet are reachable in it.
      '-netdev', `user,id=net0,hostfwd=tcp:127.0.0.1:${this.sshPort}-:22,hostfwd=tcp:127.0.0.1:${this.kubeletPort}-:10250`,
      '-device', 'virtio-net-pci,netdev=net0',
      '-virtfs', `local,path=${file('share')},mount_tag=lvp,security_model=none,readonly=on,id=lvp`,
      '-device', 'virtio-rng-pci',
      '-serial', `file:${file('console.log')}`,
    ];
    this.qemu = spawn('qemu-system-x86_64', qemuArgs, { stdio: ['ignore', 'ignore', fs.openSync(file('qemu.log'), 'a')] });
    const qemu = this.qemu;
    this.exited = new Promise((resolve) => qemu.once('exit', () => resolve()));
    const core = this.plane.kubeConfig().makeApiClient(CoreV1Api);
    await this.until(async () => ready(await core.readNode({ name: this.name }).catch(() => undefined)), `node ${this.name} is Ready`);
    await this.until(async () => (this.ssh('true', 10_000).then(() => true, () => false)), `ssh to node ${this.name} answers`);
    // Commands made before it listens, or after it is gone, connect on their own.
    this.sshMaster = spawn('ssh', [...this.sshArgs(), '-M', '-N', '-o', 'ControlPersist=no', '-o', 'ServerAliveInterval=5', '-o', 'ServerAliveCountMax=6'],
      { stdio: 'ignore' });
    this.lastBoot = { accel: this.accel, readyMs: Date.now() - started };
  }

  private async until(condition: () => Promise<boolean>, what: string): Promise<void> {
    const deadline = Date.now() + READY_TIMEOUT_MS;
    while (!await condition()) {
      if (this.qemu?.exitCode !== null) throw new Error(`the VM of node ${this.name} exited before ${what}:\n${this.console().slice(-4000)}`);
      if (Date.now() > deadline) throw new Error(`timed out waiting until ${what} (${this.accel}):\n${this.console().slice(-4000)}`);
      await new Promise((r) => setTimeout(r, 500));
    }
  }

  private stopSshMaster(): void {
    this.sshMaster?.kill();
    this.sshMaster = undefined;
    fs.rmSync(path.join(this.dir, 'ssh.sock'), { force: true });
  }

  private async waitExit(timeoutMs: number): Promise<void> {
    const timer = setTimeout(() => this.qemu?.kill('SIGKILL'), timeoutMs);
    await this.exited;
    clearTimeout(timer);
  }

  private sshArgs(): string[] {
    return ['-q', '-i', path.join(this.dir, 'id_ed25519'), '-p', String(this.sshPort), '-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null',
      '-o', 'ConnectTimeout=10', '-o', 'BatchMode=yes', '-o', `ControlPath=${path.join(this.dir, 'ssh.sock')}`, 'root@127.0.0.1'];
  }
}

function ready(node: V1Node | undefined): boolean {
  return node?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}
