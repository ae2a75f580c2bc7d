import { V1PersistentVolume } from '@kubernetes/client-node';
import { NodeInfo, provisionerName } from '../../../src/runtime/pv';
import { isOfEarlierNodeIncarnation } from '../../../src/runtime/static/recreated-node';

const OLD_UID = '11111111-2222-3333-4444-555555555555';
const NEW_UID = '66666666-7777-8888-9999-000000000000';
const NODE: NodeInfo = { name: 'worker', uid: NEW_UID, labels: { 'kubernetes.io/hostname': 'worker.example' } };
const CURRENT = provisionerName('worker', NEW_UID, false);

function pv(options: { by?: string; hostname?: string; nodeLabel?: string; local?: boolean } = {}): V1PersistentVolume {
  return {
    metadata: {
      name: 'local-pv-1',
      annotations: { 'pv.kubernetes.io/provisioned-by': options.by ?? provisionerName('worker', OLD_UID, false) },
      ...(options.nodeLabel === undefined ? {} : { labels: { 'local.storage.k8s.io/node': options.nodeLabel } }),
    },
    spec: {
      ...(options.local === false ? { hostPath: { path: '/mnt/disks/a' } } : { local: { path: '/mnt/disks/a' } }),
      nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [options.hostname ?? 'worker.example'] }] }] } },
    },
  };
}

describe('a PV of an earlier Node with the same name', () => {
  test('is one when provisioned by this node name with another UID, on this hostname', () => {
    expect(isOfEarlierNodeIncarnation(pv({ nodeLabel: 'worker' }), NODE, CURRENT)).toBe(true);
  });

  test('is one without our node label too (the Go provisioner never wrote it)', () => {
    expect(isOfEarlierNodeIncarnation(pv(), NODE, CURRENT)).toBe(true);
  });

  test('is not one when already provisioned under the current name', () => {
    expect(isOfEarlierNodeIncarnation(pv({ by: CURRENT }), NODE, CURRENT)).toBe(false);
  });

  test('is not one when it is another node whose name extends this one (worker-1 is not worker)', () => {
    expect(isOfEarlierNodeIncarnation(pv({ by: provisionerName('worker-1', OLD_UID, false) }), NODE, CURRENT)).toBe(false);
  });

  test('is not one when the rest of the provisioner name is not a UID', () => {
    expect(isOfEarlierNodeIncarnation(pv({ by: 'local-volume-provisioner-worker-something' }), NODE, CURRENT)).toBe(false);
  });

  test('is not one when another provisioner made it', () => {
    expect(isOfEarlierNodeIncarnation(pv({ by: 'example.com/other' }), NODE, CURRENT)).toBe(false);
  });

  test('is not one when its hostname affinity names another host', () => {
    expect(isOfEarlierNodeIncarnation(pv({ hostname: 'elsewhere.example' }), NODE, CURRENT)).toBe(false);
  });

  test('is not one when it carries another node\'s label', () => {
    expect(isOfEarlierNodeIncarnation(pv({ nodeLabel: 'worker-2' }), NODE, CURRENT)).toBe(false);
  });

  test('is not one when it is not a local volume', () => {
    expect(isOfEarlierNodeIncarnation(pv({ local: false }), NODE, CURRENT)).toBe(false);
  });

  test('is recognised with useNodeNameOnly too: a PV named with the earlier UID is this node\'s', () => {
    expect(isOfEarlierNodeIncarnation(pv(), NODE, provisionerName('worker', NEW_UID, true))).toBe(true);
  });
});
