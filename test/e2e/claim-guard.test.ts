/**
 * End to end, the first promise while no agent runs: a hurried administrator clears the
 * claimRef of a Released PV whose agent is down (a crash loop, an upgrade), the way
 * runbooks say to "unstick" it, and another tenant's claim waits for a volume of the
 * class. The synthesized stack's claim guard (an admission policy, enforced by the real
 * kube-apiserver) refuses every form of that edit, the PV stays Released, and the second
 * tenant gets a volume only once the agent is back and has cleaned it: for the directory
 * dialect (reclaim policy Delete and Retain), the device dialect and a pool class. The
 * other way round it, a Released PV deleted with its finalizers stripped and created
 * again from its saved YAML without claimRef (what a restore from a backup does), is
 * refused too, as is a hostPath PV on the same volume or a path written another way; the
 * agents' own creates never are. With the guard deleted, or under the Helm chart's RBAC
 * with none, the edit goes through; the agent that comes back says so on the PV and the
 * claim and cleans nothing under the new tenant.
 */
import { execFile, execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { CoreV1Api, KubeConfig, V1PersistentVolume, V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { parse, stringify } from 'yaml';
import { Cluster, find, installImageScripts, Manifest, NODE_NAME, synthesize } from './cluster';
import { POOL_PROVISIONER } from '../../src/config';
import { PoolBackend, ReclaimPolicy, VolumeMode } from '../../src/constructs';
import { directoryPVName, upstreamDevicePVName } from '../../src/runtime/pv';
import { runVolumesCommand } from '../../src/runtime/record/volumes-command';
import { AgentProcess } from '../support/agent-process';
import {
  cleanupPrivileged, createLoopDevice, describePrivileged, makeMountPoint, makeTempDir, mkfsBtrfs, mkfsExt4, mount,
} from '../support/privileged';
import { renderStaticProvisionerChart } from '../support/upstream-deployments';


const MiB = 1024 * 1024;
const NAMESPACE = 'local-volume-provisioner';
const AGENT_USER = `system:serviceaccount:${NAMESPACE}:local-volume-provisioner`;
const GUARD = 'local-volume-provisioner-claim-guard';
const REFUSED = /is forbidden: ValidatingAdmissionPolicy 'local-volume-provisioner-claim-guard' with binding 'local-volume-provisioner-claim-guard' denied request: PersistentVolume (\S+) was bound to claim default\/(\S+) \(uid [0-9a-f-]+\)/;
/** The guard's refusal of a create: the PV, its path and class, who may create it. */
const CREATE_REFUSED = new RegExp('is forbidden: ValidatingAdmissionPolicy \'local-volume-provisioner-claim-guard\' with binding \'local-volume-provisioner-claim-guard\' denied request: '
  + 'PersistentVolume (\\S+) \\(path (\\S*), storageClassName (\\S*)\\) is on storage of the local volume provisioner, '
  + `and only its agents \\(${AGENT_USER}\\) may create such a PV`);

/** The edits an administrator makes to let a Released PV be bound again, each with the tools they use. */
const PATCH_FORMS: ReadonlyArray<readonly [string, (c: Cluster, pv: string, t2: V1PersistentVolumeClaim) => Promise<unknown>]> = [
  ['kubectl patch --type json: remove /spec/claimRef', (c, pv) => c.kubectl('patch', 'pv', pv, '--type', 'json', '-p', '[{"op":"remove","path":"/spec/claimRef"}]')],
  ['kubectl patch --type json: remove /spec/claimRef/uid', (c, pv) => c.kubectl('patch', 'pv', pv, '--type', 'json', '-p', '[{"op":"remove","path":"/spec/claimRef/uid"}]')],
  ['kubectl patch --type merge: claimRef null', (c, pv) => c.kubectl('patch', 'pv', pv, '--type', 'merge', '-p', '{"spec":{"claimRef":null}}')],
  ['kubectl patch (strategic): claimRef null', (c, pv) => c.kubectl('patch', 'pv', pv, '-p', '{"spec":{"claimRef":null}}')],
  ['kubectl patch: claimRef replaced by the waiting claim', (c, pv, t2) => c.kubectl('patch', 'pv', pv, '--type', 'merge', '-p',
    JSON.stringify({ spec: { claimRef: { namespace: 'default', name: t2.metadata!.name, uid: t2.metadata!.uid } } }))],
  ['kubectl edit, deleting the claimRef lines', (c, pv) => editWithoutClaimRef(c, pv)],
  ['kubectl replace of the PV without its claimRef', async (c, pv) => {
    const read = JSON.parse(await c.kubectl('get', 'pv', pv, '-o', 'json'));
    delete read.spec.claimRef;
    const file = path.join(c.work, `${pv}-replace.json`);
    fs.writeFileSync(file, JSON.stringify(read));
    return c.kubectl('replace', '-f', file);
  }],
];

/** The node's volume record, where the synthesized DaemonSet keeps it (`--state-dir`). */
function stateDirOf(manifests: Manifest[]): string {
  const args: string[] = find(manifests, 'DaemonSet', 'local-volume-provisioner').spec.template.spec.containers[0].args;
  return args.find((a) => a.startsWith('--state-dir='))!.slice('--state-dir='.length);
}

/** `kubectl edit` with an editor that deletes the claimRef block, as an administrator does by hand. */
async function editWithoutClaimRef(c: Cluster, pv: string): Promise<string> {
  const editor = path.join(c.work, 'remove-claimref.sh');
  fs.writeFileSync(editor, '#!/bin/sh\nsed -i \'/^  claimRef:/,/^  [a-z]/{/^  claimRef:/d;/^    /d;}\' "$1"\n', { mode: 0o755 });
  try {
    return (await promisify(execFile)('kubectl', ['--kubeconfig', c.adminKubeconfig, 'edit', 'pv', pv], {
      encoding: 'utf8', timeout: 30_000, env: { ...process.env, EDITOR: editor, KUBE_EDITOR: editor },
    })).stdout;
  } catch (e) {
    const err = e as { stdout?: string; stderr?: string; message: string };
    throw new Error(`kubectl edit pv ${pv} failed:\n${err.stdout ?? ''}${err.stderr ?? err.message}`);
  }
}

/** Tries every form; returns what kubectl said of each (all are expected refused). */
async function tryEveryForm(c: Cluster, pv: string, t2: V1PersistentVolumeClaim): Promise<Array<[string, string]>> {
  const said: Array<[string, string]> = [];
  for (const [form, edit] of PATCH_FORMS) said.push([form, await edit(c, pv, t2).then((out) => `ALLOWED: ${String(out)}`, (e: Error) => e.message)]);
  return said;
}

describePrivileged('the claim guard: no claim is ever bound to a used volume, even while no agent runs', () => {
  let cluster: Cluster;
  let manifests: Manifest[];
  let removeScripts = () => {};
  const dirs = { own: '', fs: '', keep: '', pool: '', devices: '', restore: '' };
  let agent: AgentProcess | undefined;
  let deviceAgent: AgentProcess | undefined;

  beforeAll(async () => {
    removeScripts = installImageScripts();
    for (const k of Object.keys(dirs) as Array<keyof typeof dirs>) dirs[k] = makeTempDir(`lvp-guard-${k}-`);
    const pool = createLoopDevice(256 * MiB);
    mkfsBtrfs(pool.device);
    mount(pool.device, dirs.pool, { type: 'btrfs' });
    manifests = synthesize({
      storageClasses: [
        // A class of each test's own, so that a volume one offers is never the one another's tenant waits for.
        { name: 'guard-own', hostDir: dirs.own },
        { name: 'guard-fs', hostDir: dirs.fs },
        { name: 'guard-keep', hostDir: dirs.keep, storageClass: { reclaimPolicy: ReclaimPolicy.RETAIN } },
        { name: 'guard-pool', hostDir: dirs.pool, pool: PoolBackend.BTRFS },
        { name: 'guard-restore', hostDir: dirs.restore },
      ],
      devices: { specs: [{ name: 'guard-dev', storageClassName: 'guard-dev', volumeMode: VolumeMode.BLOCK, deviceDir: dirs.devices, deviceNameFilter: '^disk-' }], defaultSpec: 'guard-dev' },
      // Its pool volumes are local PVs, as before the node plugin (they stay so, and the guard keeps knowing them by their path);
      // the guard's rule for the node plugin's CSI PVs is tried by the dry runs below.
      poolVolumesAsCsi: false,
    });
    cluster = await Cluster.start(manifests);
  });
  afterEach(async () => {
    await agent?.stop();
    await deviceAgent?.stop();
    agent = deviceAgent = undefined;
    // The agents' own creates are never refused: each PV they make, in every dialect, for `volumes accept` too.
    expect(cluster.admissionRefusals.filter((r) => r.user === AGENT_USER && r.verb === 'create')).toEqual([]);
  });
  afterAll(async () => {
    await cluster?.stop();
    cleanupPrivileged();
    removeScripts();
  });

  async function startAgent(): Promise<AgentProcess> {
    agent = cluster.startAgent('local-volume-provisioner');
    await agent.waitReady();
    return agent;
  }

  async function startDeviceAgent(): Promise<AgentProcess> {
    deviceAgent = cluster.startAgent('local-volume-provisioner-devices');
    await deviceAgent.waitReady();
    return deviceAgent;
  }

  /** A tenant's claim of `className` in default, optionally with a pod that mounts it (the scheduler then places it). */
  async function tenant(name: string, className: string, options: { pod?: boolean; block?: boolean } = {}): Promise<V1PersistentVolumeClaim> {
    const claim = await cluster.create<V1PersistentVolumeClaim>({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name, namespace: 'default' },
      spec: { storageClassName: className, accessModes: ['ReadWriteOnce'], volumeMode: options.block ? 'Block' : 'Filesystem', resources: { requests: { storage: '1Mi' } } },
    });
    if (options.pod) {
      await cluster.create({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name, namespace: 'default' },
        spec: { containers: [{ name: 'app', image: 'registry.invalid/app:1' }], volumes: [{ name: 'data', persistentVolumeClaim: { claimName: name } }] },
      });
    }
    return claim;
  }

  /** The tenant goes: its pod (no kubelet ends it: at once) and its claim. */
  async function tenantGoes(name: string): Promise<void> {
    await cluster.core.deleteNamespacedPod({ name, namespace: 'default', gracePeriodSeconds: 0 }).catch(() => undefined);
    await cluster.deleteClaim(name);
    await cluster.until(() => cluster.get('PersistentVolumeClaim', name, 'default') === undefined, `claim ${name} is gone`);
  }

  const claimOf = (name: string) => cluster.get<V1PersistentVolumeClaim>('PersistentVolumeClaim', name, 'default');

  /** Every form refused with the guard's message naming the PV and the first tenant's claim; the PV as it was. */
  async function expectEveryFormRefused(pv: string, t1: string, t2: V1PersistentVolumeClaim): Promise<void> {
    const before = await cluster.core.readPersistentVolume({ name: pv });
    const said = await tryEveryForm(cluster, pv, t2);
    for (const [form, message] of said) {
      const m = REFUSED.exec(message);
      expect([form, m?.[1], m?.[2]]).toEqual([form, pv, t1]);
    }
    expect(said[0][1]).toContain(`To offer the volume again, delete the PV (kubectl delete pv ${pv})`);
    const after = (await cluster.core.readPersistentVolume({ name: pv }));
    expect(after.metadata!.resourceVersion).toBe(before.metadata!.resourceVersion);
    expect(after.status!.phase).toBe('Released');
    expect(after.spec!.claimRef!.name).toBe(t1);
  }

  test('the agents find the guard in force, and their own requests (PVs made, held, deleted, labelled) are never refused by it', async () => {
    const a = await startAgent();
    const d = await startDeviceAgent();
    for (const x of [a, d]) await cluster.until(async () => /^local_volume_provisioner_claim_guard_active 1$/m.test((await x.get('/metrics')).body), 'claim_guard_active 1');
    makeMountPoint(path.join(dirs.own, 'own'));
    const name = directoryPVName('own', NODE_NAME, 'guard-own');
    const first = await cluster.waitForPv(name, { phase: 'Available' });
    const claim = await cluster.bindClaim(name, 'own-1');
    await cluster.until(() => (cluster.pv(name)?.metadata?.finalizers ?? []).includes('local.storage.k8s.io/cleanup'), 'the agent holds the bound PV');
    await cluster.deleteClaim(claim);
    await cluster.waitForPv(name, { phase: 'Available', notUid: first.metadata!.uid });
    expect(cluster.denials.filter((x) => x.user === AGENT_USER)).toEqual([]);
  });

  test('directory dialect, Delete: with the agent down, every edit of the Released PV is refused; the waiting tenant gets the volume only once it is clean', async () => {
    const dir = path.join(dirs.fs, 'vol1');
    makeMountPoint(dir);
    await startAgent();
    const name = directoryPVName('vol1', NODE_NAME, 'guard-fs');
    const first = await cluster.waitForPv(name, { phase: 'Available' });
    await agent!.stop();

    // The agent is down from here until the end: t1 binds, writes, and goes; t2 waits.
    await cluster.bindClaim(name, 't1');
    fs.writeFileSync(path.join(dir, 'secret'), 't1\'s data');
    await tenantGoes('t1');
    await cluster.waitForPv(name, { phase: 'Released' });
    const t2 = await tenant('t2', 'guard-fs', { pod: true });
    await expectEveryFormRefused(name, 't1', t2);
    expect(claimOf('t2')?.status?.phase).toBe('Pending');
    expect(cluster.pv(name)?.metadata?.uid).toBe(first.metadata!.uid);

    // The agent comes back: the volume is cleaned, offered anew, and only then given to t2.
    await startAgent();
    await cluster.until(() => claimOf('t2')?.status?.phase === 'Bound', 't2 is bound');
    const second = cluster.pv(claimOf('t2')!.spec!.volumeName!)!;
    expect(second.spec!.local!.path).toBe(dir);
    expect(second.metadata!.uid).not.toBe(first.metadata!.uid);
    expect(fs.readdirSync(dir)).toEqual([]);
    await tenantGoes('t2');
  });

  test('directory dialect, Retain: every edit is refused, the data stays, never offered, until an administrator gives it, to the one claim named', async () => {
    const dir = path.join(dirs.keep, 'vol1');
    makeMountPoint(dir);
    await startAgent();
    const name = directoryPVName('vol1', NODE_NAME, 'guard-keep');
    await cluster.waitForPv(name, { phase: 'Available' });
    await agent!.stop();

    await cluster.bindClaim(name, 'k1');
    fs.writeFileSync(path.join(dir, 'secret'), 'k1\'s data');
    await tenantGoes('k1');
    await cluster.waitForPv(name, { phase: 'Released' });
    const k2 = await tenant('k2', 'guard-keep', { pod: true });
    await expectEveryFormRefused(name, 'k1', k2);

    // Back, the agent keeps a Released Retain PV as it is; the safe way out is to delete it: the data is then held.
    await startAgent();
    await cluster.kubectl('delete', 'pv', name, '--wait=false');
    await cluster.until(() => cluster.pv(name) === undefined, 'the deleted PV goes');
    await cluster.until(() => cluster.events('VolumeHeldDirty').some((e) => e.message?.startsWith(dir)), 'the volume is held with its data');
    expect(fs.readFileSync(path.join(dir, 'secret'), 'utf8')).toBe('k1\'s data');
    expect(claimOf('k2')?.status?.phase).toBe('Pending');
    expect(cluster.pvs().filter((pv) => pv.spec?.local?.path === dir)).toEqual([]);

    // The administrator gives the data to one claim, k3: the PV is made bound to it, and k2, waiting all along, never gets it.
    const said = await runVolumesCommand({ stateDir: stateDirOf(manifests), action: 'accept', volume: dir, handTo: 'default/k3' });
    expect(said).not.toContain('whichever claim');
    await cluster.waitForPv(name, { phase: 'Available' });
    expect(cluster.pv(name)!.spec!.claimRef).toMatchObject({ namespace: 'default', name: 'k3' });
    await tenant('k3', 'guard-keep');
    await cluster.until(() => claimOf('k3')?.status?.phase === 'Bound', 'k3 is bound');
    expect(claimOf('k3')!.spec!.volumeName).toBe(name);
    expect(claimOf('k2')?.status?.phase).toBe('Pending');
    expect(fs.readFileSync(path.join(dir, 'secret'), 'utf8')).toBe('k1\'s data');
    await tenantGoes('k2');
    await tenantGoes('k3');
  });

  test('device dialect: with the agent down, every edit of the Released PV is refused; the waiting tenant gets the device only once it is wiped', async () => {
    const loop = createLoopDevice(16 * MiB);
    fs.symlinkSync(loop.device, path.join(dirs.devices, 'disk-1'));
    await startDeviceAgent();
    const name = upstreamDevicePVName(NODE_NAME, 'disk-1');
    const first = await cluster.waitForPv(name, { phase: 'Available' });
    await deviceAgent!.stop();

    await cluster.bindClaim(name, 'd1');
    mkfsExt4(loop.device);
    await tenantGoes('d1');
    await cluster.waitForPv(name, { phase: 'Released' });
    const d2 = await tenant('d2', 'guard-dev', { pod: true, block: true });
    await expectEveryFormRefused(name, 'd1', d2);
    expect(claimOf('d2')?.status?.phase).toBe('Pending');

    await startDeviceAgent();
    await cluster.until(() => claimOf('d2')?.status?.phase === 'Bound', 'd2 is bound');
    expect(cluster.pv(claimOf('d2')!.spec!.volumeName!)!.metadata!.uid).not.toBe(first.metadata!.uid);
    await expect(promisify(execFile)('blkid', ['-p', loop.device])).rejects.toThrow();
    await tenantGoes('d2');
  });

  test('pool class: with the agent down, every edit of the Released pool PV is refused; the next claim gets a volume of its own once the agent is back', async () => {
    await startAgent();
    const p1 = await tenant('p1', 'guard-pool', { pod: true });
    await cluster.until(() => claimOf('p1')?.status?.phase === 'Bound', 'p1 is bound');
    const name = claimOf('p1')!.spec!.volumeName!;
    const volume = cluster.pv(name)!.spec!.local!.path!;
    expect(volume).toBe(path.join(dirs.pool, `pvc-${p1.metadata!.uid}`));
    fs.writeFileSync(path.join(volume, 'secret'), 'p1\'s data');
    await agent!.stop();

    await tenantGoes('p1');
    await cluster.waitForPv(name, { phase: 'Released' });
    const p2 = await tenant('p2', 'guard-pool', { pod: true });
    await expectEveryFormRefused(name, 'p1', p2);
    expect(claimOf('p2')?.status?.phase).toBe('Pending');

    await startAgent();
    await cluster.until(() => claimOf('p2')?.status?.phase === 'Bound', 'p2 is bound');
    const second = cluster.pv(claimOf('p2')!.spec!.volumeName!)!;
    expect(second.spec!.local!.path).toBe(path.join(dirs.pool, `pvc-${p2.metadata!.uid}`));
    expect(fs.readdirSync(second.spec!.local!.path!)).toEqual([]);
    await cluster.until(() => cluster.pv(name) === undefined && !fs.existsSync(volume), 'p1\'s volume is destroyed and its PV gone');
    await tenantGoes('p2');
  });

  /** The PV as `kubectl get -o yaml` saves it (what a backup holds). */
  const savedCopy = async (name: string): Promise<V1PersistentVolume> => parse(await cluster.kubectl('get', 'pv', name, '-o', 'yaml'));

  /** While its agent is down, the Released PV is deleted with its finalizers stripped, as an administrator clears the way for a restore. */
  async function deleteStripped(name: string): Promise<void> {
    await cluster.kubectl('patch', 'pv', name, '--type', 'merge', '-p', '{"metadata":{"finalizers":null}}');
    await cluster.kubectl('delete', 'pv', name, '--wait=false');
    await cluster.until(() => cluster.pv(name) === undefined, `PV ${name} is gone`);
  }

  /**
   * Creates the PV again from `copy` as a restore does, without what the server set (uid, claimRef, status,
   * finalizers), with `edit` applied; `kubectl create -f` as the administrator. Resolves with kubectl's output,
   * rejects with its error.
   */
  function restore(copy: V1PersistentVolume, edit: (pv: V1PersistentVolume) => void = () => {}): Promise<string> {
    const pv: V1PersistentVolume = JSON.parse(JSON.stringify(copy));
    for (const field of ['uid', 'resourceVersion', 'creationTimestamp', 'finalizers', 'deletionTimestamp', 'deletionGracePeriodSeconds', 'managedFields'] as const) delete pv.metadata![field];
    delete pv.spec!.claimRef;
    delete pv.status;
    edit(pv);
    const file = path.join(cluster.work, `${pv.metadata!.name}-restore.yaml`);
    // As YAML 1.1, which kubectl reads: an annotation "yes" stays a string.
    fs.writeFileSync(file, stringify(pv, { version: '1.1' }));
    return cluster.kubectl('create', '-f', file);
  }

  /** The restore is refused in the guard's name, naming that PV and path; no PV of that name is made. */
  async function expectRestoreRefused(made: Promise<string>, name: string, pvPath: string, className: string): Promise<void> {
    const said = await made.then((out) => `ALLOWED: ${out}`, (e: Error) => e.message);
    const m = CREATE_REFUSED.exec(said);
    expect({ pv: m?.[1], path: m?.[2], className: m?.[3], said }).toEqual({
      pv: name, path: pvPath, className, said: expect.stringContaining(`local-volume-provisioner volumes accept ${pvPath} --for NAMESPACE/CLAIM`),
    });
    expect(cluster.pv(name)).toBeUndefined();
  }

  /** A hostPath PV of another name on the same path: the same bypass, refused the same. */
  const asHostPath = (pv: V1PersistentVolume) => {
    pv.metadata!.name = `${pv.metadata!.name}-hostpath`;
    pv.spec!.hostPath = { path: pv.spec!.local!.path };
    delete pv.spec!.local;
    delete pv.spec!.nodeAffinity;
  };

  /** The copy's path written another way: it names the same directory once resolved. */
  const withPath = (suffix: string, rewrite: (p: string) => string) => (pv: V1PersistentVolume) => {
    pv.metadata!.name = `${pv.metadata!.name}-${suffix}`;
    pv.spec!.local!.path = rewrite(pv.spec!.local!.path);
  };

  /** The ways a path can be written so that it names the same volume while no longer starting with its directory + '/'. */
  const UNNORMALIZED: ReadonlyArray<[string, (p: string) => string]> = [
    ['leading-slashes', (p) => `/${p}`],
    ['double-slash', (p) => `${path.dirname(path.dirname(p))}//${path.basename(path.dirname(p))}/${path.basename(p)}`],
    ['dot', (p) => `${path.dirname(path.dirname(p))}/./${path.basename(path.dirname(p))}/${path.basename(p)}`],
    ['trailing-dot', (p) => `${p}/.`],
    ['relative', (p) => p.slice(1)],
  ];

  /**
   * A PV of this directory dialect's volume `dir` (class guard-restore) made, bound by a tenant who writes
   * and goes while the agent is down: Released, with that tenant's data on the volume. Returns its name and UID.
   */
  async function releasedWhileDown(dir: string, className: string, tenantName: string): Promise<{ name: string; uid: string }> {
    makeMountPoint(dir);
    await startAgent();
    const name = directoryPVName(path.basename(dir), NODE_NAME, className);
    const first = await cluster.waitForPv(name, { phase: 'Available' });
    await agent!.stop();
    await cluster.bindClaim(name, tenantName);
    fs.writeFileSync(path.join(dir, 'secret'), `${tenantName}'s data`);
    await tenantGoes(tenantName);
    await cluster.waitForPv(name, { phase: 'Released' });
    return { name, uid: first.metadata!.uid! };
  }

  test('the guard type-checks against PersistentVolume, and on create knows a PV of ours by the path of its volume (local or hostPath, the directory, one above it, however written) or its class, not by marks alone', async () => {
    const policy = JSON.parse(await cluster.kubectl('get', 'validatingadmissionpolicy', GUARD, '-o', 'json'));
    await cluster.until(async () => {
      const read = JSON.parse(await cluster.kubectl('get', 'validatingadmissionpolicy', GUARD, '-o', 'json'));
      return read.status?.observedGeneration === read.metadata.generation;
    }, 'the apiserver has type-checked the policy');
    expect(JSON.parse(await cluster.kubectl('get', 'validatingadmissionpolicy', GUARD, '-o', 'json')).status.typeChecking ?? {}).toEqual({});
    expect(policy.spec.matchConstraints.resourceRules[0].operations).toEqual(['CREATE', 'UPDATE']);

    const admin = cluster.core;
    const agentApi = (() => {
      const kc = new KubeConfig();
      kc.loadFromFile(cluster.podOnNode('local-volume-provisioner').kubeconfig);
      return kc.makeApiClient(CoreV1Api);
    })();
    const affinity = { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [NODE_NAME] }] }] } };
    type Extras = { className?: string; labels?: Record<string, string>; finalizers?: string[]; annotations?: Record<string, string> };
    /** What the server says of creating this PV (a dry run: nothing is made). */
    const verdict = (api: CoreV1Api, source: { local?: string; hostPath?: string; csi?: string }, more: Extras = {}) =>
      api.createPersistentVolume({
        dryRun: 'All',
        body: {
          apiVersion: 'v1',
          kind: 'PersistentVolume',
          metadata: { name: 'dry-run', labels: more.labels, finalizers: more.finalizers, annotations: more.annotations },
          spec: {
            capacity: { storage: '1Mi' },
            accessModes: ['ReadWriteOnce'],
            storageClassName: more.className ?? 'elsewhere',
            ...(source.local !== undefined ? { local: { path: source.local }, nodeAffinity: affinity }
              : source.csi !== undefined ? { csi: { driver: source.csi, volumeHandle: 'b7c1e1d4-2c64-4f7e-9a55-0d5d4c1e9f00' }, nodeAffinity: affinity }
                : { hostPath: { path: source.hostPath! } }),
          },
        },
      }).then(() => 'created', (e: Error) => (e.message.includes(`ValidatingAdmissionPolicy '${GUARD}'`) ? 'refused by the guard'
        : /must not contain '\.\.'/.test(e.message) ? 'invalid: ..' : `other: ${e.message.slice(0, 300)}`));

    const fsDir = dirs.fs;
    const above = path.dirname(fsDir);
    const base = path.basename(fsDir);
    const cases: Array<[string, () => Promise<string>, string]> = [
      ['local, a volume in a class directory', () => verdict(admin, { local: `${fsDir}/vol9` }), 'refused by the guard'],
      ['local, a device in the device directory', () => verdict(admin, { local: `${dirs.devices}/disk-9` }), 'refused by the guard'],
      ['local, a pool volume', () => verdict(admin, { local: `${dirs.pool}/pvc-9` }), 'refused by the guard'],
      ['local, the class directory itself', () => verdict(admin, { local: fsDir }), 'refused by the guard'],
      ['local, a directory above it (holds every volume)', () => verdict(admin, { local: above }), 'refused by the guard'],
      ['local, /', () => verdict(admin, { local: '/' }), 'refused by the guard'],
      ['local, leading //', () => verdict(admin, { local: `/${fsDir}/vol9` }), 'refused by the guard'],
      ['local, // inside', () => verdict(admin, { local: `${above}//${base}/vol9` }), 'refused by the guard'],
      ['local, /./ inside', () => verdict(admin, { local: `${above}/./${base}/vol9` }), 'refused by the guard'],
      ['local, trailing /.', () => verdict(admin, { local: `${fsDir}/vol9/.` }), 'refused by the guard'],
      ['local, the directory as /.', () => verdict(admin, { local: `${fsDir}/.` }), 'refused by the guard'],
      ['local, trailing /', () => verdict(admin, { local: `${fsDir}/vol9/` }), 'refused by the guard'],
      ['local, relative (from /)', () => verdict(admin, { local: `${fsDir.slice(1)}/vol9` }), 'refused by the guard'],
      ['local, with .. (the server\'s own validation)', () => verdict(admin, { local: `${fsDir}/../${base}/vol9` }), 'invalid: ..'],
      ['hostPath, a volume in a class directory', () => verdict(admin, { hostPath: `${fsDir}/vol9` }), 'refused by the guard'],
      ['hostPath, // inside', () => verdict(admin, { hostPath: `${above}//${base}/vol9` }), 'refused by the guard'],
      ['hostPath, a directory above it', () => verdict(admin, { hostPath: above }), 'refused by the guard'],
      ['local elsewhere, of a class of ours', () => verdict(admin, { local: '/srv/elsewhere' }, { className: 'guard-fs' }), 'refused by the guard'],
      ['local, a sibling whose name starts like a class directory', () => verdict(admin, { local: `${fsDir}-other/vol9` }), 'created'],
      ['local elsewhere, another class', () => verdict(admin, { local: '/srv/elsewhere' }), 'created'],
      ['hostPath elsewhere', () => verdict(admin, { hostPath: '/srv/elsewhere' }), 'created'],
      // Its handle names a pool volume by identity: the node plugin would publish that volume's data into the claim's pods.
      ['csi, of the agents\' node plugin', () => verdict(admin, { csi: POOL_PROVISIONER }), 'refused by the guard'],
      ['csi, another driver', () => verdict(admin, { csi: 'other.csi.example.com' }), 'created'],
      ['as the agents\' ServiceAccount, csi of their node plugin', () => verdict(agentApi, { csi: POOL_PROVISIONER }), 'created'],
      // Every instance's agents write these: another instance's PVs carry them, on its own directories and classes.
      ['local elsewhere with our label, finalizer and provisioned-by', () => verdict(admin, { local: '/srv/elsewhere' }, {
        labels: { 'local.storage.k8s.io/node': NODE_NAME },
        finalizers: ['local.storage.k8s.io/cleanup'],
        annotations: { 'pv.kubernetes.io/provisioned-by': `local-volume-provisioner-${NODE_NAME}` },
      }), 'created'],
      ['as the agents\' ServiceAccount, a volume in a class directory', () => verdict(agentApi, { local: `${fsDir}/vol9` }, { className: 'guard-fs' }), 'created'],
      ['as the agents\' ServiceAccount, a device', () => verdict(agentApi, { local: `${dirs.devices}/disk-9` }, { className: 'guard-dev' }), 'created'],
    ];
    const said: Array<[string, string]> = [];
    for (const [what, attempt] of cases) said.push([what, await attempt()]);
    expect(said).toEqual(cases.map(([what, , expected]) => [what, expected]));
  });

  test('directory dialect: with the agent down, the Released PV deleted and made again from its saved YAML is refused, as a hostPath PV on its path and its path written otherwise; the agent back cleans and offers it', async () => {
    const dir = path.join(dirs.restore, 'vol1');
    const { name, uid } = await releasedWhileDown(dir, 'guard-restore', 'n1');
    const copy = await savedCopy(name);
    await deleteStripped(name);
    const n2 = await tenant('n2', 'guard-restore', { pod: true });

    await expectRestoreRefused(restore(copy), name, dir, 'guard-restore');
    await expectRestoreRefused(restore(copy, asHostPath), `${name}-hostpath`, dir, 'guard-restore');
    for (const [suffix, rewrite] of UNNORMALIZED) await expectRestoreRefused(restore(copy, withPath(suffix, rewrite)), `${name}-${suffix}`, rewrite(dir), 'guard-restore');
    // Of another class, it is still the same volume.
    await expectRestoreRefused(restore(copy, (pv) => {
      pv.metadata!.name = `${name}-classless`; pv.spec!.storageClassName = 'elsewhere';
    }), `${name}-classless`, dir, 'elsewhere');
    const onThisVolume = (pv: V1PersistentVolume) =>
      [pv.spec?.local?.path, pv.spec?.hostPath?.path].some((p) => p?.includes(path.basename(dirs.restore)));
    expect(cluster.pvs().filter(onThisVolume)).toEqual([]);
    expect(claimOf('n2')?.status?.phase).toBe('Pending');
    expect(fs.readFileSync(path.join(dir, 'secret'), 'utf8')).toBe('n1\'s data');

    // The agent comes back: the volume is cleaned, offered under a PV it makes, and only then given to n2.
    await startAgent();
    await cluster.until(() => claimOf('n2')?.status?.phase === 'Bound', 'n2 is bound');
    const offered = cluster.pv(claimOf('n2')!.spec!.volumeName!)!;
    expect([offered.metadata!.name, offered.spec!.local!.path]).toEqual([name, dir]);
    expect(offered.metadata!.uid).not.toBe(uid);
    expect(fs.readdirSync(dir)).toEqual([]);
    await tenantGoes(n2.metadata!.name!);
  });

  test('directory dialect, Retain: the restore is refused; the administrator\'s way to bring the volume back is volumes accept --for, and the agent makes the PV for that claim', async () => {
    const dir = path.join(dirs.keep, 'vol2');
    const { name } = await releasedWhileDown(dir, 'guard-keep', 'h1');
    const copy = await savedCopy(name);
    await deleteStripped(name);
    await expectRestoreRefused(restore(copy), name, dir, 'guard-keep');

    // Back, the agent holds the volume with its data (the PV went unseen); the administrator gives it to h2 on purpose.
    await startAgent();
    await cluster.until(() => cluster.events('VolumeHeldDirty').some((e) => e.message?.startsWith(dir)), 'the volume is held with its data');
    const said = await runVolumesCommand({ stateDir: stateDirOf(manifests), action: 'accept', volume: dir, handTo: 'default/h2' });
    expect(said).not.toContain('whichever claim');
    await cluster.waitForPv(name, { phase: 'Available' });
    expect(cluster.pv(name)!.spec!.claimRef).toMatchObject({ namespace: 'default', name: 'h2' });
    await tenant('h2', 'guard-keep');
    await cluster.until(() => claimOf('h2')?.status?.phase === 'Bound', 'h2 is bound');
    expect(claimOf('h2')!.spec!.volumeName).toBe(name);
    expect(fs.readFileSync(path.join(dir, 'secret'), 'utf8')).toBe('h1\'s data');
    await tenantGoes('h2');
  });

  test('device dialect: with the agent down, the Released device PV deleted and made again from its saved YAML is refused; the agent back wipes the device and offers it', async () => {
    const loop = createLoopDevice(16 * MiB);
    const device = path.join(dirs.devices, 'disk-restore');
    fs.symlinkSync(loop.device, device);
    await startDeviceAgent();
    const name = upstreamDevicePVName(NODE_NAME, 'disk-restore');
    const first = await cluster.waitForPv(name, { phase: 'Available' });
    await deviceAgent!.stop();
    await cluster.bindClaim(name, 'e1');
    mkfsExt4(loop.device);
    await tenantGoes('e1');
    await cluster.waitForPv(name, { phase: 'Released' });
    const copy = await savedCopy(name);
    await deleteStripped(name);

    await expectRestoreRefused(restore(copy), name, device, 'guard-dev');
    await expectRestoreRefused(restore(copy, asHostPath), `${name}-hostpath`, device, 'guard-dev');
    expect(() => execFileSync('blkid', ['-p', loop.device], { stdio: 'pipe' })).not.toThrow();

    await startDeviceAgent();
    const offered = await cluster.waitForPv(name, { phase: 'Available', notUid: first.metadata!.uid });
    expect(offered.spec!.local!.path).toBe(device);
    expect(() => execFileSync('blkid', ['-p', loop.device], { stdio: 'pipe' })).toThrow();
  });

  test('pool class: with the agent down, the Released pool PV deleted and made again from its saved YAML is refused; back, the agent gives the next claim a volume of its own', async () => {
    await startAgent();
    await tenant('o1', 'guard-pool', { pod: true });
    await cluster.until(() => claimOf('o1')?.status?.phase === 'Bound', 'o1 is bound');
    const name = claimOf('o1')!.spec!.volumeName!;
    const volume = cluster.pv(name)!.spec!.local!.path!;
    fs.writeFileSync(path.join(volume, 'secret'), 'o1\'s data');
    await agent!.stop();
    await tenantGoes('o1');
    await cluster.waitForPv(name, { phase: 'Released' });
    const copy = await savedCopy(name);
    await deleteStripped(name);
    const o2 = await tenant('o2', 'guard-pool', { pod: true });

    await expectRestoreRefused(restore(copy), name, volume, 'guard-pool');
    await expectRestoreRefused(restore(copy, asHostPath), `${name}-hostpath`, volume, 'guard-pool');
    expect(fs.readFileSync(path.join(volume, 'secret'), 'utf8')).toBe('o1\'s data');

    await startAgent();
    await cluster.until(() => claimOf('o2')?.status?.phase === 'Bound', 'o2 is bound');
    const second = cluster.pv(claimOf('o2')!.spec!.volumeName!)!;
    expect(second.spec!.local!.path).toBe(path.join(dirs.pool, `pvc-${o2.metadata!.uid}`));
    expect(fs.readdirSync(second.spec!.local!.path!)).toEqual([]);
    // o1's volume, its PV gone unseen, is nobody's (the agent keeps or destroys it by its record: pool-decisions' strayKeeping).
    expect(cluster.pvs().filter((pv) => pv.spec?.local?.path === volume)).toEqual([]);
    await tenantGoes('o2');
  });

  test('a PV stripped first of our label, finalizers and class is still ours by its path (a volume source cannot change): clearing its claimRef is refused', async () => {
    const dir = path.join(dirs.fs, 'vol4');
    makeMountPoint(dir);
    await startAgent();
    const name = directoryPVName('vol4', NODE_NAME, 'guard-fs');
    await cluster.waitForPv(name, { phase: 'Available' });
    await agent!.stop();
    await cluster.bindClaim(name, 's1');
    await tenantGoes('s1');
    await cluster.waitForPv(name, { phase: 'Released' });

    await cluster.kubectl('patch', 'pv', name, '--type', 'merge', '-p',
      JSON.stringify({ metadata: { labels: { 'local.storage.k8s.io/node': null }, finalizers: ['kubernetes.io/pv-protection'] }, spec: { storageClassName: 'elsewhere' } }));
    const s2 = await tenant('s2', 'guard-fs');
    await expect(cluster.kubectl('patch', 'pv', name, '--type', 'merge', '-p', '{"spec":{"claimRef":null}}')).rejects.toThrow(REFUSED);
    expect(cluster.pv(name)?.spec?.claimRef?.name).toBe('s1');
    expect(claimOf(s2.metadata!.name!)?.status?.phase).toBe('Pending');
    await cluster.kubectl('delete', 'pv', name, '--wait=false');
    await cluster.deleteClaim('s2');
  });

  test('a claimRef written by hand without a namespace blocks none of the PV\'s updates, nor its deletion', async () => {
    const name = 'hand-made';
    // Ours by our label, which the guard reads on update (on create, a PV that names none of our storage is let through).
    await cluster.create({
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name, labels: { 'local.storage.k8s.io/node': NODE_NAME } },
      spec: {
        capacity: { storage: '1Mi' },
        accessModes: ['ReadWriteOnce'],
        storageClassName: 'elsewhere',
        claimRef: { name: 'nowhere', uid: '0b9f1c2e-4c1d-4e5f-9a8b-7c6d5e4f3a2b' },
        local: { path: '/srv/hand-made' },
        nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [NODE_NAME] }] }] } },
      },
    });
    await cluster.kubectl('annotate', 'pv', name, 'example.com/note=kept');
    await cluster.kubectl('delete', 'pv', name);
    await cluster.until(() => cluster.pv(name) === undefined, 'the PV is gone');
  });

  /** Runs `scenario` with the claim guard deleted (as an administrator might), then applies the stack again. */
  async function withoutGuard(scenario: () => Promise<void>): Promise<void> {
    await cluster.kubectl('delete', 'validatingadmissionpolicybinding', GUARD);
    await cluster.kubectl('delete', 'validatingadmissionpolicy', GUARD);
    try {
      await scenario();
    } finally {
      await cluster.kubectl('apply', '-f', path.join(cluster.work, 'stack.k8s.yaml'));
      await cluster.untilClaimGuardInForce();
    }
  }

  /** Sends an edit until the apiserver takes it: it applies a deleted policy's removal a moment after it is stored. */
  async function untilAccepted(edit: () => Promise<unknown>): Promise<void> {
    // Past the wait, one more try fails the test with kubectl's own words.
    await cluster.until(() => edit().then(() => true, () => false), 'the edit is accepted').catch(edit);
  }

  /** Both VolumeRebound Events of this PV, on it and on the claim now bound to it. */
  const reboundEvents = (pv: string, claim: string) => cluster.events('VolumeRebound')
    .filter((e) => (e.involvedObject.kind === 'PersistentVolume' && e.involvedObject.name === pv) || (e.involvedObject.kind === 'PersistentVolumeClaim' && e.involvedObject.name === claim));

  test('the guard deleted: the agent says so at start; a claim bound while it was down is reported on the PV and the claim, and nothing is cleaned under it', () => withoutGuard(async () => {
    const dir = path.join(dirs.fs, 'vol2');
    makeMountPoint(dir);
    const a = await startAgent();
    await cluster.until(() => cluster.events('ClaimGuardInactive').some((e) => e.message?.includes(`"${GUARD}", does not exist`)), 'a ClaimGuardInactive Event');
    expect((await a.get('/metrics')).body).toMatch(/^local_volume_provisioner_claim_guard_active 0$/m);
    const name = directoryPVName('vol2', NODE_NAME, 'guard-fs');
    await cluster.waitForPv(name, { phase: 'Available' });
    await cluster.bindClaim(name, 'r1');
    fs.writeFileSync(path.join(dir, 'secret'), 'r1\'s data');
    // Held by the agent's finalizer: it has seen the volume used (recorded before any PV write).
    await cluster.until(() => (cluster.pv(name)?.metadata?.finalizers ?? []).includes('local.storage.k8s.io/cleanup'), 'the agent has seen the volume used');
    await agent!.stop();

    await tenantGoes('r1');
    await cluster.waitForPv(name, { phase: 'Released' });
    // Nothing refuses it now (once the apiserver has dropped the deleted policy): the PV turns Available and the next claim is bound to r1's data.
    await untilAccepted(() => cluster.kubectl('patch', 'pv', name, '--type', 'json', '-p', '[{"op":"remove","path":"/spec/claimRef"}]'));
    await cluster.bindClaim(name, 'r2');

    const back = await startAgent();
    await cluster.until(() => reboundEvents(name, 'r2').length === 2, 'VolumeRebound on the PV and on the claim');
    expect(reboundEvents(name, 'r2')[0].message).toMatch(/is bound to claim default\/r2 .* still holds the data of claim default\/r1/);
    expect((await back.get('/metrics')).body).toContain(`local_volume_provisioner_volume_rebound{persistentvolume="${name}",storageclass="guard-fs",claim="default/r2"} 1`);
    expect(fs.readFileSync(path.join(dir, 'secret'), 'utf8')).toBe('r1\'s data');

    // Once r2 lets it go, the volume is cleaned as any Released one, and the report ends.
    await tenantGoes('r2');
    await cluster.until(() => cluster.pv(name)?.status?.phase === 'Available', 'the volume is offered again');
    expect(fs.readdirSync(dir)).toEqual([]);
    await cluster.until(async () => !(await back.get('/metrics')).body.includes('local_volume_provisioner_volume_rebound{'), 'volume_rebound is gone');
  }));

  test('the guard deleted: a PV made anew from a copy while the agent was down is found on return, and its claim told it holds another tenant\'s data', () => withoutGuard(async () => {
    const dir = path.join(dirs.fs, 'vol3');
    makeMountPoint(dir);
    await startAgent();
    const name = directoryPVName('vol3', NODE_NAME, 'guard-fs');
    const first = await cluster.waitForPv(name, { phase: 'Available' });
    await agent!.stop();

    await cluster.bindClaim(name, 'm1');
    fs.writeFileSync(path.join(dir, 'secret'), 'm1\'s data');
    await tenantGoes('m1');
    await cluster.waitForPv(name, { phase: 'Released' });
    // The administrator saves the PV, deletes it, and creates it again without its claim and status.
    const copy = JSON.parse(await cluster.kubectl('get', 'pv', name, '-o', 'json'));
    await cluster.kubectl('delete', 'pv', name);
    delete copy.spec.claimRef;
    delete copy.status;
    for (const field of ['uid', 'resourceVersion', 'creationTimestamp', 'finalizers']) delete copy.metadata[field];
    const file = path.join(cluster.work, `${name}-copy.json`);
    fs.writeFileSync(file, JSON.stringify(copy));
    // Nothing refuses it once the apiserver has dropped the deleted policy.
    await untilAccepted(() => cluster.kubectl('create', '-f', file));
    await cluster.bindClaim(name, 'm2');
    const made = cluster.pv(name)!;
    expect(made.metadata!.uid).not.toBe(first.metadata!.uid);

    await startAgent();
    await cluster.until(() => reboundEvents(name, 'm2').length === 2, 'VolumeRebound on the PV and on the claim');
    expect(reboundEvents(name, 'm2')[0].message).toContain(`still holds whatever the tenants of its earlier PV ${name} wrote`);
    expect(fs.readFileSync(path.join(dir, 'secret'), 'utf8')).toBe('m1\'s data');
    await tenantGoes('m2');
    await cluster.until(() => cluster.pv(name)?.status?.phase === 'Available' && cluster.pv(name)?.metadata?.uid !== made.metadata!.uid, 'the volume is offered again');
    expect(fs.readdirSync(dir)).toEqual([]);
  }));

  test('the guard deleted: a pool PV given to another claim while the agent was down is reported, and its volume not destroyed under it', () => withoutGuard(async () => {
    await startAgent();
    const q1 = await tenant('q1', 'guard-pool', { pod: true });
    await cluster.until(() => claimOf('q1')?.status?.phase === 'Bound', 'q1 is bound');
    const name = claimOf('q1')!.spec!.volumeName!;
    const volume = cluster.pv(name)!.spec!.local!.path!;
    fs.writeFileSync(path.join(volume, 'secret'), 'q1\'s data');
    await agent!.stop();

    await tenantGoes('q1');
    await cluster.waitForPv(name, { phase: 'Released' });
    await untilAccepted(() => cluster.kubectl('patch', 'pv', name, '--type', 'merge', '-p', '{"spec":{"claimRef":null}}'));
    await cluster.bindClaim(name, 'q2');

    const back = await startAgent();
    await cluster.until(() => reboundEvents(name, 'q2').length === 2, 'VolumeRebound on the pool PV and on the claim');
    expect(reboundEvents(name, 'q2')[0].message).toContain(`(uid ${q1.metadata!.uid})`);
    expect((await back.get('/metrics')).body).toContain(`local_volume_provisioner_volume_rebound{persistentvolume="${name}",storageclass="guard-pool",claim="default/q2"} 1`);
    expect(fs.readFileSync(path.join(volume, 'secret'), 'utf8')).toBe('q1\'s data');

    await tenantGoes('q2');
    await cluster.until(() => cluster.pv(name) === undefined && !fs.existsSync(volume), 'once q2 lets it go, the volume is destroyed and its PV gone');
  }));
});

describePrivileged('under the Helm chart\'s RBAC, only the image changed: no guard, and the agent says what is lost', () => {
  const RELEASE = 'local-static-provisioner';
  let cluster: Cluster;
  let agent: AgentProcess | undefined;
  let dir: string;

  beforeAll(async () => {
    dir = makeTempDir('lvp-guard-chart-');
    cluster = await Cluster.start(renderStaticProvisionerChart({
      release: RELEASE, namespace: 'default', classes: [{ name: 'chart-fs', hostDir: dir, volumeMode: 'Filesystem' }],
    }));
  });
  afterAll(async () => {
    await agent?.stop();
    await cluster?.stop();
    cleanupPrivileged();
  });

  test('the agent says no guard protects its volumes; a claim bound while it was down is reported, and never cleaned under', async () => {
    makeMountPoint(path.join(dir, 'vol1'));
    agent = cluster.startAgent(RELEASE);
    await agent.waitReady();
    await cluster.until(() => cluster.events('ClaimGuardInactive').some((e) => e.message?.startsWith('no claim guard is known to this agent')), 'a ClaimGuardInactive Event');
    expect((await agent.get('/metrics')).body).toMatch(/^local_volume_provisioner_claim_guard_active 0$/m);

    const name = directoryPVName('vol1', NODE_NAME, 'chart-fs');
    await cluster.waitForPv(name, { phase: 'Available' });
    await cluster.bindClaim(name, 'c1');
    fs.writeFileSync(path.join(dir, 'vol1', 'secret'), 'c1\'s data');
    await cluster.until(async () => (await agent!.get('/metrics')).body.includes('local_volume_provisioner_volumes{storageclass="chart-fs",state="bound"} 1'),
      'the agent has seen the volume used');
    await agent.stop();
    await cluster.deleteClaim('c1');
    await cluster.waitForPv(name, { phase: 'Released' });
    await cluster.kubectl('patch', 'pv', name, '--type', 'merge', '-p', '{"spec":{"claimRef":null}}');
    await cluster.bindClaim(name, 'c2');

    agent = cluster.startAgent(RELEASE);
    await agent.waitReady();
    await cluster.until(() => cluster.events('VolumeRebound').length === 2, 'VolumeRebound on the PV and on the claim');
    expect(fs.readFileSync(path.join(dir, 'vol1', 'secret'), 'utf8')).toBe('c1\'s data');
    expect(cluster.pv(name)?.status?.phase).toBe('Bound');
  });
});
