import { DEFAULTS, DEVICES, FULL, JOB_CLEANING, NODE_CLEANUP, POOLS } from './stacks';
import { schemaErrors, synth } from './support';
import { LocalVolumeProvisionerProps } from '../../src/constructs';

/**
 * The whole synthesized output of each stack, pinned. A change here is a change to
 * what users deploy: read the diff (`npx jest --ci=false test/constructs`).
 */
const STACKS: [string, LocalVolumeProvisionerProps][] = [
  ['defaults', DEFAULTS],
  ['full options', FULL],
  ['device dialect', DEVICES],
  ['job cleaning', JOB_CLEANING],
  ['node cleanup', NODE_CLEANUP],
  ['pools', POOLS],
];

describe.each(STACKS)('the %s stack', (_name, props) => {
  test('synthesizes the pinned manifests', () => {
    expect(synth(props)).toMatchSnapshot();
  });

  test('validates against the Kubernetes and prometheus-operator schemas', () => {
    expect(schemaErrors(synth(props))).toEqual([]);
  });
});

test('the schema check rejects an invalid object, so the checks above can fail', () => {
  const manifests = synth(DEFAULTS);
  const ds = manifests.find((m) => m.kind === 'DaemonSet')!;
  ds.spec.template.spec.containers[0].ports[0].containerPort = 'metrics';
  expect(schemaErrors(manifests)).toEqual([expect.stringMatching(/^apps\/v1\/DaemonSet local-volume-provisioner: .*containerPort must be integer/)]);
});
