/**
 * The agent's check of the claim guard, against a real apiserver: the construct's
 * policy and binding read by name, what each way of it not being in force says, and
 * when it is read again (on a virtual clock).
 */
import type { CoreV1Event, V1PersistentVolume, V1ValidatingAdmissionPolicy, V1ValidatingAdmissionPolicyBinding } from '@kubernetes/client-node';
import { ClaimGuardCheck, claimGuardVerdict } from '../../../src/runtime/agent/claim-guard-check';
import { KubeApi } from '../../../src/runtime/kube/api-client';
import { EventRecorder } from '../../../src/runtime/kube/event-recorder';
import { createLogger, ProvisionerMetrics } from '../../../src/runtime/observability';
import { one, synth } from '../../constructs/support';
import { Kubernetes } from '../../support/kubernetes';
import { eventually, localPv, serverAndApi } from '../kube/fixtures';
import { VirtualClock } from '../kube/virtual-clock';

const NAME = 'local-volume-provisioner-claim-guard';
const manifests = synth({ storageClasses: [{ name: 'fast-disks', hostDir: '/mnt/fast-disks' }] });
const POLICY = one(manifests, 'ValidatingAdmissionPolicy') as V1ValidatingAdmissionPolicy;
const BINDING = one(manifests, 'ValidatingAdmissionPolicyBinding') as V1ValidatingAdmissionPolicyBinding;

describe('the claim guard\'s verdict', () => {
  test('is in force with the construct\'s policy and its Deny binding', () => {
    expect(claimGuardVerdict(NAME, POLICY, BINDING)).toEqual({ active: true });
  });

  test('is not without the policy, naming it and why it may be missing', () => {
    expect(claimGuardVerdict(NAME, undefined, BINDING)).toEqual({ active: false, why: expect.stringMatching(/"local-volume-provisioner-claim-guard", does not exist \(deleted, or a cluster older than Kubernetes 1\.30\)/) });
  });

  test('is not without the binding: the policy applies to nothing', () => {
    expect(claimGuardVerdict(NAME, POLICY, undefined)).toEqual({ active: false, why: expect.stringContaining('applies to nothing') });
  });

  test('is not when the binding applies another policy', () => {
    const other = { ...BINDING, spec: { ...BINDING.spec, policyName: 'something-else' } };
    expect(claimGuardVerdict(NAME, POLICY, other)).toEqual({ active: false, why: expect.stringContaining('applies policy "something-else"') });
  });

  test('is not when the binding only warns or audits: it refuses nothing', () => {
    const warns = { ...BINDING, spec: { ...BINDING.spec, validationActions: ['Warn', 'Audit'] } };
    expect(claimGuardVerdict(NAME, POLICY, warns)).toEqual({ active: false, why: expect.stringContaining('[Warn, Audit], without Deny') });
  });
});

describe('the agent\'s check of the claim guard', () => {
  let server: Kubernetes;
  let api: KubeApi;
  let clock: VirtualClock;
  let metrics: ProvisionerMetrics;
  let check: ClaimGuardCheck | undefined;

  beforeEach(async () => {
    ({ server, api } = await serverAndApi({ maxAttempts: 1 }));
    clock = new VirtualClock();
    metrics = new ProvisionerMetrics({ version: 'test', processMetrics: false });
  });
  afterEach(async () => {
    check?.stop();
    check = undefined;
    await server.reset();
  });

  /** Starts a check as `user` (the administrator by default) of the guard `name`, probing with `probePv` when given. */
  async function start(name = NAME, user = 'admin', probePv?: string): Promise<EventRecorder> {
    const as = user === 'admin' ? api : new KubeApi(await server.kubeConfigOf(user), { maxAttempts: 1 });
    const logger = createLogger({ level: 'fatal' });
    const events = new EventRecorder(as, { nodeName: 'worker-1', logger });
    const boundPv = () => (probePv === undefined ? undefined : { metadata: { name: probePv } });
    check = new ClaimGuardCheck({ api: as, events, metrics, logger, nodeName: 'worker-1', name, clock, boundPv });
    check.start();
    return events;
  }

  const active = async () => (await metrics.exposition()).match(/^local_volume_provisioner_claim_guard_active (\d)$/m)?.[1];
  const warnings = async () => (await server.list<CoreV1Event>('v1', 'Event', 'default')).filter((e) => e.reason === 'ClaimGuardInactive');

  test('finds the construct\'s guard in force, and says nothing', async () => {
    await server.create(POLICY);
    await server.create(BINDING);
    const events = await start();
    await eventually(async () => await active() === '1', 'claim_guard_active is 1');
    await events.flush();
    expect(await warnings()).toEqual([]);
  });

  /** A PV of ours (in the guarded class directory, labelled) bound to a claim, as the guard protects it. */
  async function boundPvOfOurs(): Promise<V1PersistentVolume> {
    const pv = { ...localPv('guarded', { node: 'worker-1', path: '/mnt/fast-disks/guarded' }), spec: { ...localPv('guarded', { node: 'worker-1' }).spec, local: { path: '/mnt/fast-disks/guarded' }, storageClassName: 'fast-disks' } };
    // Made by the administrator, as no guard is in place: the apiserver applies a guard an earlier test deleted for a moment after.
    await eventually(() => server.create(pv).then(() => true, (e: Error) => {
      if (!/denied request/.test(e.message)) throw e;
      return false;
    }), 'the apiserver no longer applies the guard an earlier test deleted');
    await server.bindNewClaim('guarded', 'tenant');
    return (await server.get<V1PersistentVolume>('v1', 'PersistentVolume', 'guarded'))!;
  }

  /** Waits until the apiserver applies the guard as stored (it does a moment after a change): refusing, or not, a dry run clearing the claimRef. */
  async function untilGuard(refuses: boolean): Promise<void> {
    const refused = () => api.dryRunClearClaimRef('guarded').then(() => false, () => true);
    await eventually(async () => await refused() === refuses, `the apiserver ${refuses ? 'applies' : 'no longer applies'} the guard`);
  }

  test('with a PV bound, proves the guard in force by a dry run the server refuses in its name, and changes nothing', async () => {
    const pv = await boundPvOfOurs();
    await server.create(POLICY);
    await server.create(BINDING);
    await untilGuard(true);
    const before = server.counters.get('patch', 'persistentvolumes').requests;
    const events = await start(NAME, 'admin', 'guarded');
    await eventually(async () => await active() === '1', 'claim_guard_active is 1');
    expect(server.counters.get('patch', 'persistentvolumes').requests).toBe(before + 1);
    await events.flush();
    expect(await warnings()).toEqual([]);
    const after = (await server.get<V1PersistentVolume>('v1', 'PersistentVolume', 'guarded'))!;
    expect(after.metadata!.resourceVersion).toBe(pv.metadata!.resourceVersion);
  });

  test('a binding narrowed to nothing (an object selector) is found out by the dry run, asked twice: installed, but it refuses nothing', async () => {
    await boundPvOfOurs();
    await server.create(POLICY);
    await server.create(BINDING);
    await untilGuard(true);
    const narrowed = (await server.get<V1ValidatingAdmissionPolicyBinding>('admissionregistration.k8s.io/v1', 'ValidatingAdmissionPolicyBinding', NAME))!;
    await server.replace({ ...narrowed, spec: { ...narrowed.spec, matchResources: { objectSelector: { matchLabels: { guarded: 'yes' } } } } });
    await untilGuard(false);
    const probes = () => server.counters.get('patch', 'persistentvolumes').requests;
    const before = probes();
    const events = await start(NAME, 'admin', 'guarded');
    await eventually(() => probes() === before + 1, 'the first dry run');
    await events.flush();
    expect(await warnings()).toEqual([]);
    // Asked again 30 s on (the retry timer is set once the first check has ended).
    await eventually(async () => {
      clock.advance(30_000);
      await events.flush();
      return (await warnings()).length > 0;
    }, 'a ClaimGuardInactive Event');
    expect(probes()).toBe(before + 2);
    expect((await warnings())[0].message).toMatch(/is installed but refuses nothing: clearing the claimRef of PV guarded was accepted \(a dry run; nothing was changed\)/);
    expect(await active()).toBe('0');
    expect((await server.get<V1PersistentVolume>('v1', 'PersistentVolume', 'guarded'))!.spec!.claimRef!.name).toBe('tenant');
  });

  test('without a guard to check (no --claim-guard), says once on the Node that a used volume\'s PV can be bound again while no agent runs', async () => {
    const events = await start('');
    await eventually(async () => (await warnings()).length > 0, 'a ClaimGuardInactive Event');
    await events.flush();
    const [event] = await warnings();
    expect(event).toMatchObject({ type: 'Warning', involvedObject: { kind: 'Node', name: 'worker-1' } });
    expect(event.message).toMatch(/^no claim guard is known to this agent .*: while no agent runs on a node, an administrator who clears the claimRef/);
    expect(await active()).toBe('0');
    // Checked again five minutes on: nothing new to say.
    clock.advance(5 * 60_000);
    await events.flush();
    expect((await warnings()).map((e) => e.count ?? 1)).toEqual([1]);
  });

  test('a guard deleted while the agent runs is found missing at the next check, five minutes on', async () => {
    await server.create(POLICY);
    await server.create(BINDING);
    const events = await start();
    await eventually(async () => await active() === '1', 'claim_guard_active is 1');
    await server.delete('admissionregistration.k8s.io/v1', 'ValidatingAdmissionPolicy', NAME);

    clock.advance(4 * 60_000);
    await events.flush();
    expect(await active()).toBe('1');
    clock.advance(60_000);
    await eventually(async () => await active() === '0', 'claim_guard_active is 0');
    await events.flush();
    expect((await warnings()).map((e) => e.message)).toEqual([expect.stringContaining(`ValidatingAdmissionPolicy "${NAME}", does not exist`)]);
  });

  test('a guard this agent may not read (the Helm chart\'s RBAC) is not known to be in force, and the Event names the rule to add', async () => {
    await server.create(POLICY);
    await server.create(BINDING);
    // Events only, as the Go provisioner's ClusterRole grants them.
    const user = 'system:serviceaccount:local-volume-provisioner:chart';
    await server.tokenFor(user);
    await server.ensure({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'events-only' }, rules: [{ apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] }] } as never);
    await server.ensure({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'events-only' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'events-only' },
      subjects: [{ kind: 'ServiceAccount', name: 'chart', namespace: 'local-volume-provisioner' }],
    } as never);
    const events = await start(NAME, user);
    await eventually(async () => {
      await events.flush();
      return (await warnings()).length > 0;
    }, 'a ClaimGuardInactive Event', 10_000);
    expect((await warnings())[0].message).toContain(`may not read the claim guard "${NAME}", so it cannot tell whether it is in force (add {apiGroups: ["admissionregistration.k8s.io"]`);
    expect(await active()).toBe('0');
    expect(server.denials(user).map((d) => `${d.verb} ${d.resource}`)).toContain('get validatingadmissionpolicies');
  });

  test('a read that fails keeps what was known and is tried again in 30 s, not 5 minutes', async () => {
    await server.create(POLICY);
    await server.create(BINDING);
    await start();
    await eventually(async () => await active() === '1', 'claim_guard_active is 1');
    server.faults.failNext({ verb: 'get', resource: 'validatingadmissionpolicies', code: 503 });
    clock.advance(5 * 60_000);
    await eventually(() => server.counters.get('get', 'validatingadmissionpolicies').requests === 2, 'the failed read');
    expect(await active()).toBe('1');
    await server.delete('admissionregistration.k8s.io/v1', 'ValidatingAdmissionPolicyBinding', NAME);
    clock.advance(30_000);
    await eventually(async () => await active() === '0', 'the binding found missing 30 s later');
  });
});
