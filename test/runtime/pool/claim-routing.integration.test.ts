/**
 * The claim routing, end to end on the real control plane: the construct's
 * MutatingAdmissionPolicy labels each pool class's claim with its node, and an agent
 * given `--claim-routing` lists and watches only its node's claims. Two nodes, each with
 * an agent (the real bin) on a btrfs pool of its own: `routed` with the routing, `watching-all`
 * without it (as where the policy cannot run), against the real scheduler and PV controller.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { CoreV1Event, V1PersistentVolume, V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { POOL_CLAIM_NODE_LABEL, POOL_PROVISIONER } from '../../../src/config';
import { claimRoutingPolicySpec } from '../../../src/constructs/claim-routing';
import { AgentProcess } from '../../support/agent-process';
import { writeConfigDir } from '../../support/class-config';
import { Kubernetes } from '../../support/kubernetes';
import { cleanupPrivileged, createLoopDevice, describePrivileged, makeTempDir, mkfsBtrfs, mount } from '../../support/privileged';
import { eventually } from '../kube/fixtures';


const MiB = 1024 * 1024;
const CLASS = 'routed-pool';
const NAMESPACE = 'lvp';
const APP = 'app';
const ROUTING = 'lvp-claim-routing';
const ROUTED = 'routed';
const WATCHING_ALL = 'watching-all';

describePrivileged('the claim routing: each agent watches only its node\'s claims', () => {
  let k: Kubernetes;
  const agents = new Map<string, AgentProcess>();
  const starts = new Map<string, () => AgentProcess>();

  const policy = () => ({
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingAdmissionPolicy',
    metadata: { name: ROUTING },
    spec: claimRoutingPolicySpec({ name: ROUTING, poolClasses: [CLASS] }),
  });
  const binding = () => ({
    apiVersion: 'admissionregistration.k8s.io/v1', kind: 'MutatingAdmissionPolicyBinding', metadata: { name: ROUTING }, spec: { policyName: ROUTING },
  });

  /** Until the apiserver applies the policy as stored (it does a moment after a change): a claim made now is labelled, or not. */
  async function untilRouting(applied: boolean): Promise<void> {
    let n = 0;
    await eventually(async () => {
      const name = `probe-${++n}`;
      await k.create(claimObject(name, 'nowhere'));
      const labelled = (await claim(name))?.metadata?.labels?.[POOL_CLAIM_NODE_LABEL] === 'nowhere';
      await k.delete('v1', 'PersistentVolumeClaim', name, APP);
      return labelled === applied;
    }, `the apiserver ${applied ? 'applies' : 'no longer applies'} the claim routing`, 30_000);
  }

  beforeAll(async () => {
    k = await Kubernetes.forSuite({ controllers: true });
    await k.reset();
    for (const ns of [NAMESPACE, APP]) await k.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }).catch(() => undefined);
    await k.create({
      apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: CLASS }, provisioner: POOL_PROVISIONER, volumeBindingMode: 'WaitForFirstConsumer', reclaimPolicy: 'Delete', allowVolumeExpansion: true,
    });
    await k.create({
      apiVersion: 'storage.k8s.io/v1', kind: 'CSIDriver', metadata: { name: POOL_PROVISIONER }, spec: { attachRequired: false, storageCapacity: true, volumeLifecycleModes: ['Persistent'] },
    });
    await k.create(policy());
    await k.create(binding());
    await untilRouting(true);
    const work = makeTempDir('lvp-claim-routing-');
    const kubeconfig = path.join(work, 'kubeconfig');
    await k.writeKubeconfig(kubeconfig);
    for (const node of [ROUTED, WATCHING_ALL]) {
      await k.create({ apiVersion: 'v1', kind: 'Node', metadata: { name: node, labels: { 'kubernetes.io/hostname': node } } });
      const loop = createLoopDevice(256 * MiB);
      mkfsBtrfs(loop.device);
      const dir = path.join(work, node, 'pool');
      mount(loop.device, dir, { type: 'btrfs' });
      const configDir = writeConfigDir(path.join(work, node, 'config'), { storageClassMap: { [CLASS]: { hostDir: dir, mountDir: dir, pool: 'btrfs' } } });
      const stateDir = path.join(work, node, 'state');
      fs.mkdirSync(stateDir);
      const start = () => AgentProcess.start(
        ['run', '--config-dir', configDir, '--listen-address', '127.0.0.1:0', '--discovery-period', '1m', '--state-dir', stateDir,
          ...node === ROUTED ? [`--claim-routing=${ROUTING}`] : []],
        { KUBECONFIG: kubeconfig, MY_NODE_NAME: node, MY_NAMESPACE: NAMESPACE },
      );
      starts.set(node, start);
      agents.set(node, start());
    }
    await Promise.all([...agents.values()].map((a) => a.waitReady()));
  });

  afterAll(async () => {
    await Promise.all([...agents.values()].map((a) => a.stop()));
    await k?.reset();
    cleanupPrivileged();
  });

  const claim = (name: string) => k.get<V1PersistentVolumeClaim>('v1', 'PersistentVolumeClaim', name, APP);
  const pv = (name: string) => k.get<V1PersistentVolume>('v1', 'PersistentVolume', name);
  const logs = () => [...agents].map(([node, a]) => `--- ${node}\n${a.log()}`).join('\n');
  const metric = async (node: string, name: string) => new RegExp(`^${name} (\\d+)$`, 'm').exec((await agents.get(node)!.get('/metrics')).body)?.[1];

  /** A claim of the class put on `node` as the scheduler puts one (its selected-node annotation), with no pod. */
  function claimObject(name: string, node: string, size = '8Mi'): object {
    return {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name, namespace: APP, annotations: { 'volume.kubernetes.io/selected-node': node } },
      spec: { storageClassName: CLASS, accessModes: ['ReadWriteOnce'], resources: { requests: { storage: size } } },
    };
  }

  test('the API server labels a pool class\'s claim with its node, relabels it when the scheduler\'s choice changes, unlabels it when the choice goes', async () => {
    await k.create(claimObject('moving', 'node-x'));
    expect((await claim('moving'))!.metadata!.labels).toEqual({ [POOL_CLAIM_NODE_LABEL]: 'node-x' });
    await k.patch('v1', 'PersistentVolumeClaim', 'moving', { metadata: { annotations: { 'volume.kubernetes.io/selected-node': 'node-y' } } }, APP);
    expect((await claim('moving'))!.metadata!.labels).toEqual({ [POOL_CLAIM_NODE_LABEL]: 'node-y' });
    // A label written by hand is put right on the same write.
    await k.patch('v1', 'PersistentVolumeClaim', 'moving', { metadata: { labels: { [POOL_CLAIM_NODE_LABEL]: 'forged' } } }, APP);
    expect((await claim('moving'))!.metadata!.labels).toEqual({ [POOL_CLAIM_NODE_LABEL]: 'node-y' });
    await k.patch('v1', 'PersistentVolumeClaim', 'moving', { metadata: { annotations: { 'volume.kubernetes.io/selected-node': null } } }, APP);
    expect((await claim('moving'))!.metadata!.labels?.[POOL_CLAIM_NODE_LABEL]).toBeUndefined();
    await k.delete('v1', 'PersistentVolumeClaim', 'moving', APP);
  });

  test('the routed agent says the routing is in force and watches only the claims labelled with its node; the other watches every claim, and says why', async () => {
    await eventually(async () => await metric(ROUTED, 'local_volume_provisioner_claim_routing_active') === '1', 'the routed agent says the routing is in force', 60_000);
    expect(await metric(WATCHING_ALL, 'local_volume_provisioner_claim_routing_active')).toBe('0');
    const watches = k.counters.requests({ verb: 'watch', resource: 'persistentvolumeclaims' }).map((r) => r.labelSelector ?? '');
    expect(watches).toEqual(expect.arrayContaining([`${POOL_CLAIM_NODE_LABEL}=${ROUTED}`, '']));
    await eventually(async () => (await k.list<CoreV1Event>('v1', 'Event', 'default'))
      .some((e) => e.reason === 'ClaimRoutingInactive' && e.involvedObject.name === WATCHING_ALL && e.message!.includes('no claim routing is known')),
    'ClaimRoutingInactive on the other agent\'s Node', 30_000);
  });

  test('claims written for other nodes send the routed agent no claim: the agent watching every claim gets each', async () => {
    const routedWatch = { verb: 'watch', resource: 'persistentvolumeclaims', labelSelector: `${POOL_CLAIM_NODE_LABEL}=${ROUTED}` };
    const routedBytes = () => k.counters.total(routedWatch).bytes;
    const otherBytes = () => k.counters.total({ verb: 'watch', resource: 'persistentvolumeclaims' }).bytes - routedBytes();
    const before = { routed: routedBytes(), other: otherBytes() };
    for (let i = 0; i < 20; i++) await k.create(claimObject(`elsewhere-${i}`, `node-${i}`));
    const claimBytes = JSON.stringify(await claim('elsewhere-0')).length;
    // Sent to the agent watching all: by then sent to every watcher it is for.
    await eventually(() => otherBytes() - before.other >= 20 * claimBytes, 'the agent watching every claim got all 20', 60_000);
    // A bookmark, at most: no claim.
    expect(routedBytes() - before.routed).toBeLessThan(claimBytes);
    for (let i = 0; i < 20; i++) await k.delete('v1', 'PersistentVolumeClaim', `elsewhere-${i}`, APP);
  });

  test('a claim put on the routed node gets its volume, grows, and goes with its claim', async () => {
    await k.create(claimObject('mine', ROUTED));
    await eventually(async () => (await claim('mine'))?.status?.phase === 'Bound', `the claim is bound (logs:\n${logs()})`, 60_000);
    const pvName = (await claim('mine'))!.spec!.volumeName!;
    await k.patch('v1', 'PersistentVolumeClaim', 'mine', { spec: { resources: { requests: { storage: '16Mi' } } } }, APP);
    await eventually(async () => (await claim('mine'))?.status?.capacity?.storage === '16Mi', `the claim grew (logs:\n${logs()})`, 60_000);
    await k.delete('v1', 'PersistentVolumeClaim', 'mine', APP);
    await eventually(async () => (await pv(pvName)) === undefined, `its volume is destroyed and its PV gone (logs:\n${logs()})`, 60_000);
  });

  test('on a cluster without the policy, the agent given the routing watches every claim, says why, and serves its claims', async () => {
    await agents.get(ROUTED)!.stop();
    await k.delete('admissionregistration.k8s.io/v1', 'MutatingAdmissionPolicyBinding', ROUTING);
    await k.delete('admissionregistration.k8s.io/v1', 'MutatingAdmissionPolicy', ROUTING);
    await untilRouting(false);
    agents.set(ROUTED, starts.get(ROUTED)!());
    await agents.get(ROUTED)!.waitReady();
    await eventually(async () => (await k.list<CoreV1Event>('v1', 'Event', 'default'))
      .some((e) => e.reason === 'ClaimRoutingInactive' && e.involvedObject.name === ROUTED && e.message!.includes(`"${ROUTING}", does not exist`)),
    `ClaimRoutingInactive says the policy is missing (logs:\n${logs()})`, 30_000);
    expect(await metric(ROUTED, 'local_volume_provisioner_claim_routing_active')).toBe('0');
    await k.create(claimObject('older', ROUTED));
    expect((await claim('older'))!.metadata!.labels?.[POOL_CLAIM_NODE_LABEL]).toBeUndefined();
    await eventually(async () => (await claim('older'))?.status?.phase === 'Bound', `the unlabelled claim is bound (logs:\n${logs()})`, 60_000);
  });

  test('the policy installed, a claim made before it is labelled by the one agent holding the lease, and the agent watches only its node\'s claims', async () => {
    await k.create(policy());
    await k.create(binding());
    await untilRouting(true);
    // Read again at its next check (every 5 minutes), or at a start.
    await agents.get(ROUTED)!.stop();
    agents.set(ROUTED, starts.get(ROUTED)!());
    await agents.get(ROUTED)!.waitReady();
    await eventually(async () => (await claim('older'))?.metadata?.labels?.[POOL_CLAIM_NODE_LABEL] === ROUTED, `the claim is labelled (logs:\n${logs()})`, 60_000);
    expect((await k.get<{ spec?: { holderIdentity?: string } }>('coordination.k8s.io/v1', 'Lease', 'local-volume-provisioner-claim-routing', NAMESPACE))?.spec?.holderIdentity)
      .toBe(ROUTED);
    expect(await metric(ROUTED, 'local_volume_provisioner_claim_routing_active')).toBe('1');
    // Its claim is in its routed watch: it grows, and goes.
    const pvName = (await claim('older'))!.spec!.volumeName!;
    await k.patch('v1', 'PersistentVolumeClaim', 'older', { spec: { resources: { requests: { storage: '16Mi' } } } }, APP);
    await eventually(async () => (await claim('older'))?.status?.capacity?.storage === '16Mi', `the claim grew (logs:\n${logs()})`, 60_000);
    await k.delete('v1', 'PersistentVolumeClaim', 'older', APP);
    await eventually(async () => (await pv(pvName)) === undefined, 'its volume is destroyed and its PV gone', 60_000);
  });

  test('the agent without the routing serves its node\'s claims as before', async () => {
    await k.create(claimObject('theirs', WATCHING_ALL));
    await eventually(async () => (await claim('theirs'))?.status?.phase === 'Bound', `the claim is bound (logs:\n${logs()})`, 60_000);
    const pvName = (await claim('theirs'))!.spec!.volumeName!;
    await k.delete('v1', 'PersistentVolumeClaim', 'theirs', APP);
    await eventually(async () => (await pv(pvName)) === undefined, 'its volume is destroyed and its PV gone', 60_000);
  });
});
