import { KubeApi } from '../../src/runtime/kube/api-client';
import { LeaderElector } from '../../src/runtime/kube/leader-election';
import { startTestApiServer } from '../apiserver';
import { DEFAULTS } from './stacks';
import { Manifest, synth } from './support';

/**
 * The node-cleanup Role, enforced by the test API server's RBAC: the runtime's own
 * leader election, running as the synthesized ServiceAccount, needs exactly the Lease
 * rules the construct emits; without any one of them it cannot lead.
 */
const NAMESPACE = 'local-volume-provisioner';
const SA = 'system:serviceaccount:local-volume-provisioner:local-volume-provisioner-node-cleanup';
const LEASE = 'local-volume-provisioner-node-cleanup';

/** Loads the synthesized Namespace and node-cleanup RBAC, with `edit` applied to its Role's rules. */
async function serverWith(edit: (rules: Manifest[]) => Manifest[] = (r) => r) {
  const server = await startTestApiServer({ rbac: true });
  for (const m of synth({ ...DEFAULTS, nodeCleanup: {} })) {
    if (m.kind === 'Namespace' || (/Role/.test(m.kind) && m.metadata.name === LEASE)) {
      server.create(m.kind === 'Role' ? { ...m, rules: edit(m.rules) } : m);
    }
  }
  return server;
}

function elector(server: Awaited<ReturnType<typeof startTestApiServer>>, name = LEASE): LeaderElector {
  return new LeaderElector(new KubeApi(server.kubeConfig(SA)), { namespace: NAMESPACE, name, identity: 'node-cleanup-0' });
}

test('with the synthesized Role, node cleanup takes and renews its Lease without a denial', async () => {
  const server = await serverWith();
  try {
    const e = elector(server);
    expect(await e.tryAcquireOrRenew()).toBe(true); // get (404), create
    expect(await e.tryAcquireOrRenew()).toBe(true); // get, update
    expect(server.rbacDenials).toEqual([]);
  } finally {
    await server.stop();
  }
});

test.each([
  ['create', (rules: Manifest[]) => rules.filter((r) => !r.verbs.includes('create')), 'create'],
  ['get and update', (rules: Manifest[]) => rules.filter((r) => !r.verbs.includes('update')), 'get'],
])('without the Lease %s rule, node cleanup cannot lead', async (_rule, edit, deniedVerb) => {
  const server = await serverWith(edit);
  try {
    expect(await elector(server).tryAcquireOrRenew()).toBe(false);
    expect(server.rbacDenials.map((d) => `${d.verb} ${d.resource}`)).toContain(`${deniedVerb} leases`);
  } finally {
    await server.stop();
  }
});

test('the Role reads and renews only its own Lease', async () => {
  const server = await serverWith();
  try {
    expect(await elector(server, 'someone-elses-lease').tryAcquireOrRenew()).toBe(false);
    expect(server.rbacDenials.map((d) => `${d.verb} ${d.resource}/${d.name}`)).toContain('get leases/someone-elses-lease');
  } finally {
    await server.stop();
  }
});
