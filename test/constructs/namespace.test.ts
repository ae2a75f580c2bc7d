import { App, Chart, Testing } from 'cdk8s';
import { DEFAULTS } from './stacks';
import { all, one, synth } from './support';
import { LocalVolumeProvisioner } from '../../src/constructs';

/**
 * The Namespace is emitted only when it is the instance's own: emitting a namespace that
 * holds other workloads would relabel it (privileged Pod Security) and let
 * `kubectl delete -f` of this provisioner delete it with everything in it.
 */
describe('the Namespace the construct names itself', () => {
  test('is created, with the Pod Security label the privileged agents need', () => {
    expect(one(synth(DEFAULTS), 'Namespace').metadata).toMatchObject({
      name: 'local-volume-provisioner',
      labels: { 'pod-security.kubernetes.io/enforce': 'privileged' },
    });
  });

  test('is named after the instance, so a second instance gets a namespace of its own', () => {
    const manifests = synth({ ...DEFAULTS, name: 'lvp-b' });
    expect(one(manifests, 'Namespace').metadata.name).toBe('lvp-b');
    expect(one(manifests, 'DaemonSet').metadata.namespace).toBe('lvp-b');
  });

  test('is left out with createNamespace: false', () => {
    expect(all(synth({ ...DEFAULTS, createNamespace: false }), 'Namespace')).toEqual([]);
  });
});

test('the construct tells its namespace, for objects that go beside it', () => {
  const chart = new Chart(Testing.app(), 'c', { namespace: 'storage' });
  expect(new LocalVolumeProvisioner(chart, 'a', DEFAULTS).namespace).toBe('storage');
  expect(new LocalVolumeProvisioner(chart, 'b', { ...DEFAULTS, name: 'other', namespace: 'disks' }).namespace).toBe('disks');
});

describe('a namespace named by the props or the chart', () => {
  test('is used but not created (namespace)', () => {
    const manifests = synth({ ...DEFAULTS, namespace: 'kube-system' });
    expect(all(manifests, 'Namespace')).toEqual([]);
    expect(one(manifests, 'DaemonSet').metadata.namespace).toBe('kube-system');
  });

  test('is used but not created (the chart namespace)', () => {
    const manifests = synth(DEFAULTS, 'storage');
    expect(all(manifests, 'Namespace')).toEqual([]);
    expect(one(manifests, 'DaemonSet').metadata.namespace).toBe('storage');
  });

  test('is created when asked (createNamespace: true)', () => {
    expect(one(synth({ ...DEFAULTS, namespace: 'storage', createNamespace: true }), 'Namespace').metadata.name).toBe('storage');
  });
});

describe('a Namespace the construct must never emit', () => {
  test.each(['kube-system', 'default', 'kube-public', 'kube-node-lease'])('%s, even with createNamespace: true', (namespace) => {
    expect(() => synth({ ...DEFAULTS, namespace, createNamespace: true }))
      .toThrow(`createNamespace: "${namespace}" is created by Kubernetes; the construct never emits it (set createNamespace: false)`);
  });

  test('one that another provisioner of the app already creates', () => {
    const app: App = Testing.app();
    new LocalVolumeProvisioner(new Chart(app, 'a'), 'first', { ...DEFAULTS, namespace: 'storage', createNamespace: true });
    expect(() => new LocalVolumeProvisioner(new Chart(app, 'b'), 'second', { ...DEFAULTS, name: 'other', namespace: 'storage', createNamespace: true }))
      .toThrow('createNamespace: the Namespace "storage" is already created by the LocalVolumeProvisioner a/first');
  });

  test('two provisioners of one app may share a namespace that neither creates', () => {
    const app: App = Testing.app();
    const image = 'registry.example.com/lvp:1.0.0';
    new LocalVolumeProvisioner(new Chart(app, 'a'), 'first', { ...DEFAULTS, image, namespace: 'storage' });
    new LocalVolumeProvisioner(new Chart(app, 'b'), 'second', { ...DEFAULTS, image, name: 'other', namespace: 'storage' });
    expect(all(app.charts.flatMap((c) => Testing.synth(c)), 'Namespace')).toEqual([]);
  });
});
