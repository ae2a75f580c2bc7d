/**
 * What the claim guard costs: the construct's admission policy is evaluated by the API
 * server on every create and update of a PV, so a claim binding one of ours (the PV
 * controller's writes) and any PV update are timed with it in force and without,
 * alternating, on one control plane. The PVs are made as the agents make them, as their
 * ServiceAccount (impersonated): the guard refuses anyone else's. The agents' own cost is
 * two reads at start and every 5 minutes.
 */
import { performance } from 'node:perf_hooks';
import { CoreV1Api, PatchStrategy, setHeaderOptions, V1PersistentVolume, V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { Chart, Testing } from 'cdk8s';
import { LocalVolumeProvisioner } from '../../src/constructs';
import { NODE_LABEL } from '../../src/runtime/well-known';
import { Watched } from '../../test/support/watched';
import { BenchCluster, CLASS, NODE, until } from '../cluster';
import { millis, percentile, row } from '../table';

const MERGE = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
/** The agents' ServiceAccount of the instance guardObjects() synthesizes (the default name, its own namespace), with every permission. */
const AS_AGENTS = setHeaderOptions('Impersonate-User', 'system:serviceaccount:local-volume-provisioner:local-volume-provisioner',
  setHeaderOptions('Impersonate-Group', 'system:masters'));

/** The construct's policy and binding for the bench's class. */
function guardObjects(): Array<Record<string, unknown>> {
  const chart = new Chart(Testing.app(), 'bench');
  new LocalVolumeProvisioner(chart, 'lvp', { storageClasses: [{ name: CLASS, hostDir: '/mnt/disks' }] });
  return Testing.synth(chart).filter((m) => m.kind === 'ValidatingAdmissionPolicy' || m.kind === 'ValidatingAdmissionPolicyBinding');
}

function ourPv(name: string): V1PersistentVolume {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name, labels: { [NODE_LABEL]: NODE } },
    spec: {
      capacity: { storage: '1Gi' },
      accessModes: ['ReadWriteOnce'],
      storageClassName: CLASS,
      local: { path: `/mnt/disks/${name}` },
      nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [NODE] }] }] } },
    },
  };
}

export async function claimGuardCost(perRound = 25, rounds = 4): Promise<void> {
  const cluster = await BenchCluster.start();
  const kc = cluster.k.plane.kubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  const claims = await Watched.start<V1PersistentVolumeClaim>(kc, '/api/v1/namespaces/default/persistentvolumeclaims',
    () => core.listNamespacedPersistentVolumeClaim({ namespace: 'default' }));
  const onOff = () => ({ on: [] as number[], off: [] as number[] });
  const times = { create: onOff(), bind: onOff(), update: onOff() };
  try {
    // A bound PV of ours whose claimRef the guard protects: a dry-run clearing it tells whether the guard is in force now.
    await cluster.k.create(ourPv('probe'));
    await cluster.k.bindNewClaim('probe', 'probe');
    const inForce = () => core.patchPersistentVolume({ name: 'probe', body: { spec: { claimRef: null } }, dryRun: 'All' }, MERGE).then(() => false, () => true);
    const objects = guardObjects();
    let n = 0;
    for (let round = 0; round < 2 * rounds; round++) {
      const on = round % 2 === 1;
      for (const o of on ? objects : [...objects].reverse()) {
        if (on) await cluster.k.create(o);
        else await cluster.k.delete('admissionregistration.k8s.io/v1', o.kind as string, (o.metadata as { name: string }).name);
      }
      // The apiserver applies a policy change a moment after it is stored.
      for (let t = Date.now(); await inForce() !== on;) {
        if (Date.now() - t > 30_000) throw new Error(`the claim guard is not ${on ? 'in force' : 'gone'} 30 s after its change`);
      }
      for (let i = 0; i < perRound; i++) {
        const name = `pv-${n++}`;
        const tc = performance.now();
        await core.createPersistentVolume({ body: ourPv(name) }, AS_AGENTS);
        times.create[on ? 'on' : 'off'].push(performance.now() - tc);
        await until(() => cluster.pv(name)?.status?.phase === 'Available', `${name} is Available`);
        const t0 = performance.now();
        await cluster.k.create({
          apiVersion: 'v1',
          kind: 'PersistentVolumeClaim',
          metadata: { name, namespace: 'default' },
          spec: { accessModes: ['ReadWriteOnce'], storageClassName: CLASS, volumeName: name, resources: { requests: { storage: '1Gi' } } },
        });
        await until(() => claims.get(name, 'default')?.status?.phase === 'Bound' && cluster.pv(name)?.status?.phase === 'Bound', `claim ${name} is Bound`);
        times.bind[on ? 'on' : 'off'].push(performance.now() - t0);
        // An update of a bound PV of ours: the policy's whole check (matched, then validated).
        const t1 = performance.now();
        await core.patchPersistentVolume({ name, body: { metadata: { annotations: { 'bench/touched': String(i) } } } }, MERGE);
        times.update[on ? 'on' : 'off'].push(performance.now() - t1);
      }
    }
  } finally {
    await claims.stop();
    await cluster.stop();
  }
  const compare = (xs: { on: number[]; off: number[] }) => {
    const on = percentile(xs.on, 50);
    const off = percentile(xs.off, 50);
    return `${millis(on)} with the guard, ${millis(off)} without (${(on / off).toFixed(2)}×; median of ${xs.on.length} each, alternating)`;
  };
  row('Claim guard: a PV of ours created by the agents (the policy matches its path and lets their ServiceAccount through)', compare(times.create));
  row('Claim guard: a claim naming a PV of ours, created to Bound (the PV controller\'s writes pass the policy)', compare(times.bind));
  row('Claim guard: an update of a bound PV of ours (the policy matches and validates it)', compare(times.update));
  row('Claim guard: the agents\' requests for it', '2 reads and, where a PV is bound, 1 dry-run update, at start and every 5 minutes per agent; none on the write path');
}
