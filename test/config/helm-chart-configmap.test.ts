import { parse } from 'yaml';
import { valid, warningsOf } from './helpers';
import { configMapData, parseProvisionerConfig } from '../../src/config';

/*
 * The ConfigMap as the upstream Helm chart (sig-storage-local-static-provisioner,
 * templates/configmap.yaml) renders it for typical values: booleans written as
 * "true"/"yes", storageClassMap as a literal block with 7-space class fields,
 * blockCleanerCommand items and namePattern quoted, selector via toYaml|nindent 8.
 * Users switching to us keep this ConfigMap unchanged.
 */
const CHART_CONFIGMAP = `
apiVersion: v1
kind: ConfigMap
metadata:
  name: local-static-provisioner-config
  namespace: kube-system
  labels:
    helm.sh/chart: local-static-provisioner-2.0.0
    app.kubernetes.io/name: local-static-provisioner
data:
  setPVOwnerRef: "true"
  useNodeNameOnly: "true"
  useJobForCleaning: "yes"
  minResyncPeriod: "5m0s"
  storageClassMap: |
    fast-disks:
       hostDir: /mnt/fast-disks
       mountDir: /mnt/fast-disks
       blockCleanerCommand:
         - "/scripts/shred.sh"
         - "2"
       volumeMode: Filesystem
       fsType: ext4
       namePattern: "*"
    shared-disks:
       hostDir: /mnt/shared
       mountDir: /mnt/shared
       volumeMode: Block
       namePattern: "nvme*,sd[b-z]"
       selector:
        - matchExpressions:
          - key: topology.kubernetes.io/zone
            operator: In
            values:
            - zone-a
  nodeLabelsForPV: |
    - kubernetes.io/hostname
    - topology.kubernetes.io/zone
  labelsForPV: |
    team: storage
`;

describe('the Helm chart\'s rendered ConfigMap', () => {
  const result = parseProvisionerConfig(configMapData(parse(CHART_CONFIGMAP) as { data: Record<string, string> }));

  test('loads without errors or warnings', () => {
    valid(result);
    expect(warningsOf(result)).toEqual([]);
  });

  test('its quoted booleans and duration are read', () => {
    expect(valid(result)).toMatchObject({ setPVOwnerRef: true, useNodeNameOnly: true, useJobForCleaning: true, minResyncPeriod: 300_000 });
  });

  test('its classes are read with the chart\'s cleaner command and defaults for the rest', () => {
    expect(valid(result).storageClassMap).toEqual({
      'fast-disks': {
        hostDir: '/mnt/fast-disks',
        mountDir: '/mnt/fast-disks',
        blockCleanerCommand: ['/scripts/shred.sh', '2'],
        volumeMode: 'Filesystem',
        accessMode: 'ReadWriteOnce',
        fsType: 'ext4',
        namePattern: '*',
        selector: [],
      },
      'shared-disks': {
        hostDir: '/mnt/shared',
        mountDir: '/mnt/shared',
        blockCleanerCommand: ['/scripts/quick_reset.sh'],
        volumeMode: 'Block',
        accessMode: 'ReadWriteOnce',
        fsType: '',
        namePattern: 'nvme*,sd[b-z]',
        selector: [{ matchExpressions: [{ key: 'topology.kubernetes.io/zone', operator: 'In', values: ['zone-a'] }] }],
      },
    });
  });

  test('its PV labels are read', () => {
    expect(valid(result)).toMatchObject({
      nodeLabelsForPV: ['kubernetes.io/hostname', 'topology.kubernetes.io/zone'],
      labelsForPV: { team: 'storage' },
    });
  });
});
