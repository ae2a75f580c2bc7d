import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { admissionPolicyObjects } from './admission-policy';
import { CLEANUP_FINALIZER, NODE_LABEL, POOL_PROVISIONER } from '../config';
import { ResolvedClaimGuard } from './resolve';

/**
 * The claim guard: a ValidatingAdmissionPolicy, enforced by the API server itself,
 * so it holds while no agent runs. It refuses the two ways a PV of ours can offer a
 * used volume, with the last tenant's data on it, to the next claim:
 *
 * - UPDATE: once a PV of ours has been bound to a claim (its claimRef carries that claim's
 *   UID), nobody may clear or change that claimRef: the PV binder would otherwise offer
 *   the PV to the next claim. Exempt: the PV controller, which clears a claimRef only for
 *   a claim that is bound to another volume (it never used this one). The agents are not
 *   exempt: they never change a claimRef, and each proves the guard by a dry run of that
 *   very update, which must be refused.
 * - CREATE: nobody but the agents may create a PV on a volume of ours. A Released PV
 *   deleted (its finalizers stripped) and created again from a saved copy or a backup
 *   without its claimRef, while no agent runs, would be bound at once. The agents make
 *   every PV of ours (each dialect, pools, and `volumes accept PATH --for NS/CLAIM`, which
 *   is how an administrator brings a retained volume back on purpose); the PV controller
 *   and node cleanup create none.
 *
 * The way to offer a used volume again is to delete its PV, which the agent cleans (or
 * holds) before it makes a new one.
 *
 * One policy for both operations, each condition and validation saying which it is for:
 * the agents read the guard by one name (`--claim-guard`) and check it is in force, so a
 * guard deleted or unbound is found whichever half goes; and the exemptions differ per
 * operation (an agent exempt from the update rule would see its own probe accepted).
 *
 * Which PVs are ours:
 * - By the path of the volume source (`spec.local.path`, or `spec.hostPath.path`: a
 *   hostPath PV on our storage is the same bypass): one that names one of the construct's
 *   directories, a volume in one, or a directory that holds one (`/mnt` holds
 *   `/mnt/fast-disks`). A volume source cannot be changed, so on update the PV stays ours
 *   whatever is done to its labels, finalizers and class. The path is compared as the
 *   kernel resolves it, not as written: empty and `.` components are dropped (`//`, `/./`,
 *   a trailing `/` or `/.`; a relative path is taken from `/`), so `//mnt/fast-disks/vol1`
 *   or `/mnt/./fast-disks/vol1` is ours too. A path with a `..` component could resolve
 *   anywhere and is taken as ours (the API server's own validation refuses `..` in both
 *   sources before any admission policy runs; this is a second wall). Symlinks and bind
 *   mounts elsewhere on the node cannot be seen from the API server: a path through one is
 *   not recognised (docs/operations.md, guarantee 15).
 * - By driver: a CSI PV of the agents' node plugin (pool volumes where it serves kubelet),
 *   whose volumeHandle names a pool volume by its identity: a copy of one, bound to another
 *   claim, would be published into that claim's pods with the volume's data.
 * - By class: a PV of one of the construct's classes (a replaced provisioner's PV before
 *   an agent adopts it; on create, a copy whose path was changed).
 * - On update only, by our marks: the agents' node label or cleanup finalizer. On create
 *   the marks are whatever the creator writes, and every instance's agents (and the Go
 *   provisioner) write the same ones: a PV of another instance of the construct carries
 *   them, on that instance's directories and classes, and this guard must not refuse that
 *   instance's agents. A PV that names none of our storage cannot hand out our data.
 *
 * Every field is read optionally: a PV or claimRef written by hand may lack any of them,
 * and an error in a failurePolicy Fail policy would refuse every create or update.
 *
 * Written as plain ApiObjects: cdk8s-plus-28 knows only the v1beta1 API of Kubernetes
 * 1.28, and the policy is GA as admissionregistration.k8s.io/v1 since Kubernetes 1.30.
 */

/** Who clears a claimRef of a claim bound elsewhere: the PV controller, with or without its own ServiceAccount. */
const PV_CONTROLLER_USERS = ['system:serviceaccount:kube-system:persistent-volume-binder', 'system:kube-controller-manager'];

const celString = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
const celList = (items: readonly string[]) => `[${items.map(celString).join(', ')}]`;
/** A CEL string expression: text as written (adjacent pieces as one literal), `{ cel }` parts evaluated. */
function concat(parts: ReadonlyArray<string | { readonly cel: string }>): string {
  const merged: Array<string | { readonly cel: string }> = [];
  for (const p of parts) {
    const last = merged[merged.length - 1];
    if (typeof p === 'string' && typeof last === 'string') merged[merged.length - 1] = last + p;
    else merged.push(p);
  }
  return merged.map((p) => (typeof p === 'string' ? celString(p) : p.cel)).join(' + ');
}

/** CEL: whether `pv` is a CSI PV of the agents' node plugin. */
const csiIsOurs = (pv: string) => `${pv}.spec.?csi.?driver.orValue('') == ${celString(POOL_PROVISIONER)}`;

/** The path of a PV's volume source (local or hostPath; a PV has at most one), '' for any other source. */
const volumePath = (pv: string) => `${pv}.spec.?local.?path.orValue(${pv}.spec.?hostPath.?path.orValue(''))`;

/**
 * CEL: whether the path of `pv`'s volume source names storage in one of `directories`
 * (normalized, as resolveClaimGuard gives them): the directory itself, anything under it,
 * or a directory above it. Both sides are compared with a trailing `/`, the path with its
 * empty and `.` components dropped; `[x].exists(v, ...)` binds a value once.
 */
function pathIsOurs(pv: string, directories: readonly string[]): string {
  if (directories.length === 0) return 'false';
  const dirs = celList(directories.map((d) => (d.endsWith('/') ? d : `${d}/`)));
  const resolved = "'/' + p.split('/').filter(c, c != '' && c != '.').map(c, c + '/').join('')";
  return `[${volumePath(pv)}].exists(p, p != '' && (p.split('/').exists(c, c == '..') `
    + `|| [${resolved}].exists(r, ${dirs}.exists(d, r.startsWith(d) || d.startsWith(r)))))`;
}

/** The policy's spec: which creates and updates it looks at, and what it refuses, with what message. */
export function claimGuardPolicySpec(guard: ResolvedClaimGuard): Record<string, unknown> {
  const ofOurClass = (pv: string) => (guard.storageClassNames.length > 0 ? [`${pv}.spec.?storageClassName.orValue('') in ${celList(guard.storageClassNames)}`] : []);
  const oursOnCreate = [
    // The volume the new PV would give its claim, however its path is written.
    pathIsOurs('object', guard.volumeDirectories),
    csiIsOurs('object'),
    ...ofOurClass('object'),
  ];
  const oursOnUpdate = [
    // A PV's volume source is immutable: one in a directory of ours is ours, whatever its labels, finalizers and class say now.
    pathIsOurs('oldObject', guard.volumeDirectories),
    csiIsOurs('oldObject'),
    // Every PV an agent makes or adopts carries the node label; a PV it holds, the finalizer.
    `${celString(NODE_LABEL)} in oldObject.metadata.?labels.orValue({})`,
    `${celString(CLEANUP_FINALIZER)} in oldObject.metadata.?finalizers.orValue([])`,
    // A replaced provisioner's PV before the agent adopts it has only its class.
    ...ofOurClass('oldObject'),
  ];
  const onCreate = "request.operation == 'CREATE'";
  const notCreate = "request.operation != 'CREATE'";
  const notUpdate = "request.operation != 'UPDATE'";
  const username = 'request.userInfo.username';

  // Every claimRef field read optionally: a claimRef written by hand may lack any of them.
  const was = (field: string) => ({ cel: `oldObject.spec.?claimRef.?${field}.orValue('')` });
  const same = (field: string) => `object.spec.?claimRef.?${field}.orValue('') == ${was(field).cel}`;
  const pv = { cel: 'oldObject.metadata.name' };
  const updateMessage = concat([
    'PersistentVolume ', pv, ' was bound to claim ', was('namespace'), '/', was('name'),
    ' (uid ', was('uid'), ') and its volume holds that tenant\'s data until the provisioner cleans it: ',
    'its claimRef may not be cleared or changed, or the next claim would be bound to that data. ',
    'To offer the volume again, delete the PV (kubectl delete pv ', pv, '): the provisioner cleans the volume (reclaim policy Delete) ',
    'or keeps its data (Retain) before it is offered again. See "A PV is stuck Released" in the provisioner\'s docs/operations.md.',
  ]);
  const created = { cel: "object.metadata.?name.orValue('')" };
  const path = { cel: volumePath('object') };
  const createMessage = concat([
    'PersistentVolume ', created, ' (path ', path, ', storageClassName ', { cel: "object.spec.?storageClassName.orValue('')" },
    ') is on storage of the local volume provisioner, and only its agents (', guard.agentUsers.join(', '), ') may create such a PV: ',
    'a PV made anew, from a saved copy or a backup, would let the next claim be bound to whatever the volume\'s last tenant left on it ',
    'before the provisioner cleans it. Let the provisioner bring the volume back: once its agent runs on the node, it cleans the volume ',
    'and offers it under a new PV (reclaim policy Delete), or holds its data (Retain) until you say, in the agent\'s pod on that node, ',
    'local-volume-provisioner volumes accept ', path, ' --for NAMESPACE/CLAIM (that claim gets the data) or local-volume-provisioner volumes reclaim ', path,
    ' (cleaned first). See "Bring a retained volume back" in the provisioner\'s docs/operations.md.',
  ]);
  return {
    failurePolicy: 'Fail',
    matchConstraints: {
      // Scope written out: a rule the server defaults (scope '*') makes every kubectl apply patch it again.
      resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources: ['persistentvolumes'], scope: 'Cluster' }],
    },
    // All must hold for the policy to apply; each says which operation it is about. CEL's ?: evaluates one branch only:
    // on CREATE there is no oldObject.
    matchConditions: [
      { name: 'a-volume-of-ours', expression: `${onCreate} ? (${oursOnCreate.join(' || ')}) : (${oursOnUpdate.join(' || ')})` },
      { name: 'update-of-a-pv-bound-to-a-claim', expression: `${notUpdate} || ${was('uid').cel} != ''` },
      { name: 'update-not-by-the-pv-controller', expression: `${notUpdate} || !(${username} in ${celList(PV_CONTROLLER_USERS)})` },
      { name: 'create-not-by-an-agent', expression: `${notCreate} || !(${username} in ${celList(guard.agentUsers)})` },
    ],
    validations: [
      {
        expression: `${notUpdate} || (${['uid', 'namespace', 'name'].map(same).join(' && ')})`,
        reason: 'Forbidden',
        messageExpression: updateMessage,
      },
      {
        expression: notCreate,
        reason: 'Forbidden',
        messageExpression: createMessage,
      },
    ],
  };
}

/** The policy and its binding (Deny: a refused update fails), both named `guard.name`; cluster-scoped. */
export function claimGuardObjects(scope: Construct, guard: ResolvedClaimGuard, labels: Record<string, string>): ApiObject[] {
  return admissionPolicyObjects(scope, {
    id: 'ClaimGuard', kind: 'ValidatingAdmissionPolicy', name: guard.name, labels, spec: claimGuardPolicySpec(guard), binding: { validationActions: ['Deny'] },
  });
}
