/**
 * The rule for a Node recreated under the same name, through the real
 * `local-volume-provisioner run` (run-directory.ts wires it): the agent restarted
 * on the new Node recycles the Released PV of the earlier one and duplicates none.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { V1PersistentVolume } from '@kubernetes/client-node';
import { directoryPVName, provisionerName } from '../../../src/runtime/pv';
import { PROVISIONED_BY_ANNOTATION } from '../../../src/runtime/well-known';
import { AgentProcess } from '../../support/agent-process';
import { writeConfigDir } from '../../support/class-config';
import { Kubernetes } from '../../support/kubernetes';
import { cleanupPrivileged, describePrivileged, makeMountPoint, makeTempDir } from '../../support/privileged';
import { eventually } from '../kube/fixtures';
import { createStorageClass, JOB_NAMESPACE, NODE_HOSTNAME, NODE_NAME, seedCluster } from '../static/fixture';


const CLASS = 'local-fs';

describePrivileged('a Node recreated under the same name, through the bin', () => {
  let server: Kubernetes | undefined;
  const bins: AgentProcess[] = [];
  afterEach(async () => {
    for (const bin of bins.splice(0)) if (bin.running) await bin.kill('SIGKILL');
    await server?.reset();
    server = undefined;
  });
  afterAll(cleanupPrivileged);

  test('the restarted agent cleans and re-offers the Released PV of the earlier Node, keeps the others, duplicates none', async () => {
    server = await Kubernetes.forSuite({ controllers: true });
    await seedCluster(server);
    await createStorageClass(server, CLASS, {});
    const work = makeTempDir('lvp-recreated-');
    const mountDir = path.join(work, 'disks');
    for (const e of ['vol1', 'vol2']) makeMountPoint(path.join(mountDir, e));
    const kubeconfig = path.join(work, 'kubeconfig');
    await server.writeKubeconfig(kubeconfig);
    const configDir = writeConfigDir(path.join(work, 'config'), { storageClassMap: { [CLASS]: { hostDir: mountDir, mountDir } } });
    const start = () => {
      const bin = AgentProcess.start(['run', '--config-dir', configDir, '--listen-address', '127.0.0.1:0', '--discovery-period', '1m'], {
        KUBECONFIG: kubeconfig, MY_NODE_NAME: NODE_NAME, MY_NAMESPACE: JOB_NAMESPACE,
      });
      bins.push(bin);
      return bin;
    };
    const pv = (entry: string) => server!.get<V1PersistentVolume>('v1', 'PersistentVolume', directoryPVName(entry, NODE_NAME, CLASS));
    const [pv1, pv2] = [directoryPVName('vol1', NODE_NAME, CLASS), directoryPVName('vol2', NODE_NAME, CLASS)];

    const first = start();
    await eventually(async () => (await pv('vol1'))?.status?.phase === 'Available' && (await pv('vol2'))?.status?.phase === 'Available',
      'the first agent offers both volumes', 30_000);
    const [before1, before2] = [(await pv('vol1'))!, (await pv('vol2'))!];
    expect(await first.kill('SIGTERM')).toBe(0);

    // The Node is deleted and registers again: same name, new UID.
    await server.delete('v1', 'Node', NODE_NAME);
    const node = await server.create({ apiVersion: 'v1', kind: 'Node', metadata: { name: NODE_NAME, labels: { 'kubernetes.io/hostname': NODE_HOSTNAME } } });
    // While no agent runs, a tenant writes data and lets the claim go.
    fs.writeFileSync(path.join(mountDir, 'vol1', 'data'), 'the earlier tenant');
    await server.create({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'data', namespace: 'default' },
      spec: { accessModes: ['ReadWriteOnce'], storageClassName: CLASS, resources: { requests: { storage: before1.spec!.capacity!.storage } } },
    });
    await server.bindClaim(pv1, { namespace: 'default', name: 'data' });
    await server.delete('v1', 'PersistentVolumeClaim', 'data', 'default');
    await eventually(async () => (await pv('vol1'))?.status?.phase === 'Released', 'vol1 is Released');

    const second = start();
    await eventually(async () => {
      const now = await pv('vol1');
      return now !== undefined && now.metadata!.uid !== before1.metadata!.uid && now.status?.phase === 'Available';
    }, `the new agent cleans, deletes and re-offers vol1 (log so far:\n${second.log()})`, 30_000);

    const newName = provisionerName(NODE_NAME, node.metadata.uid, false);
    expect(fs.readdirSync(path.join(mountDir, 'vol1'))).toEqual([]);
    expect((await pv('vol1'))!.metadata!.annotations![PROVISIONED_BY_ANNOTATION]).toBe(newName);
    expect((await pv('vol2'))!.metadata!.uid).toBe(before2.metadata!.uid);
    await eventually(async () => (await pv('vol2'))!.metadata!.annotations![PROVISIONED_BY_ANNOTATION] === newName, 'vol2 is now provisioned by the new agent');
    expect((await server.list<V1PersistentVolume>('v1', 'PersistentVolume')).map((p) => p.metadata!.name).sort()).toEqual([pv1, pv2].sort());
    expect(await second.kill('SIGTERM')).toBe(0);
  });
});
