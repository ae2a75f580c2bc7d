/**
 * The cluster controllers our runtime depends on, each switchable, running
 * asynchronously after the writes that concern them (as real controllers do):
 * PV/PVC protection (admission adds the finalizer; the controller removes it when
 * the volume is no longer in use), the PV binder's phase bookkeeping
 * (Available, Bound, Released), the garbage collector (ownerReferences and the
 * orphan/foreground finalizers), namespace deletion, and a job controller that
 * records a start but never runs pods. Tests bind claims and finish Jobs here.
 */
import { Registry, now } from './registry';
import { ResourceType, findResource, resourceForKind, RESOURCES } from './resources';
import { Change, Entry, Store, cloneObject } from './store';

const PV = findResource('v1', 'persistentvolumes')!;
const PVC = findResource('v1', 'persistentvolumeclaims')!;
const PODS = findResource('v1', 'pods')!;
const NAMESPACES = findResource('v1', 'namespaces')!;
const JOBS = findResource('batch/v1', 'jobs')!;

export const PV_PROTECTION = 'kubernetes.io/pv-protection';
export const PVC_PROTECTION = 'kubernetes.io/pvc-protection';

/** Which controllers run. Turn one off to see what happens without it. */
export interface ControllerSwitches {
  /** PV and PVC protection finalizers. @default true */
  pvProtection: boolean;
  /** PV and PVC phases (Available, Bound, Released, Lost). @default true */
  persistentVolumes: boolean;
  /** ownerReference garbage collection and delete propagation. @default true */
  garbageCollector: boolean;
  /** Deleting a namespace deletes its contents. @default true */
  namespaces: boolean;
  /** New Jobs get a startTime and one active pod (no pod really runs). @default true */
  jobs: boolean;
}

const without = (list: string[] | undefined, item: string) => (list ?? []).filter((x) => x !== item);

export class Controllers {
  /** Switching a controller on makes it look at every object again, as a starting controller lists the world. */
  readonly switches: ControllerSwitches;
  private readonly queue: Change[] = [];
  /** Dependents by owner uid, so garbage collection does not scan every object on every delete. */
  private readonly dependents = new Map<string, Map<string, [ResourceType, string | undefined, string]>>();
  private scheduled = false;
  /** Failures of controller writes, kept for tests to inspect rather than thrown into nowhere. */
  readonly errors: Error[] = [];

  constructor(private readonly store: Store, private readonly registry: Registry) {
    const state: ControllerSwitches = { pvProtection: true, persistentVolumes: true, garbageCollector: true, namespaces: true, jobs: true };
    this.switches = new Proxy(state, {
      set: (target, key, value) => {
        const wasOff = !target[key as keyof ControllerSwitches];
        (target as any)[key] = value;
        if (wasOff && value) this.resyncAll();
        return true;
      },
    });
    registry.addAdmissionHook((r, obj, op) => {
      if (op !== 'CREATE' || !this.switches.pvProtection) return;
      const finalizer = r === PV ? PV_PROTECTION : r === PVC ? PVC_PROTECTION : undefined;
      const current: string[] = obj.metadata.finalizers ?? [];
      if (finalizer && !current.includes(finalizer)) obj.metadata.finalizers = [...current, finalizer];
    });
    store.subscribe((c) => {
      this.indexOwners(c);
      this.enqueue(c);
    });
  }

  private enqueue(c: Change): void {
    this.queue.push(c);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.drain());
    }
  }

  private resyncAll(): void {
    for (const r of RESOURCES) for (const e of this.store.all(r)) this.enqueue({ rv: e.rv, type: 'MODIFIED', resource: r, entry: e, prev: e });
  }

  private indexOwners(c: Change): void {
    const id = `${c.resource.group}/${c.resource.resource}/${c.entry.key}`;
    const meta = c.entry.obj.metadata;
    for (const ref of c.prev?.obj.metadata.ownerReferences ?? []) this.dependents.get(ref.uid)?.delete(id);
    if (c.type === 'DELETED') return;
    for (const ref of meta.ownerReferences ?? []) {
      let deps = this.dependents.get(ref.uid);
      if (!deps) {
        deps = new Map();
        this.dependents.set(ref.uid, deps);
      }
      deps.set(id, [c.resource, meta.namespace, meta.name]);
    }
  }

  private drain(): void {
    this.scheduled = false;
    this.registry.garbageCollection = this.switches.garbageCollector;
    const batch = this.queue.splice(0);
    for (const c of batch) {
      try {
        this.reconcile(c);
      } catch (e) {
        this.errors.push(e as Error);
      }
    }
  }

  private reconcile(c: Change): void {
    const s = this.switches;
    if (c.resource === PV && c.type !== 'DELETED') {
      if (s.persistentVolumes) this.syncVolume(c.entry);
      if (s.pvProtection) this.releaseProtection(PV, c.entry, PV_PROTECTION, (pv) => pv.status?.phase === 'Bound');
    }
    if (c.resource === PVC) {
      if (c.type !== 'DELETED' && s.pvProtection) this.releaseProtection(PVC, c.entry, PVC_PROTECTION, (pvc) => this.claimInUse(pvc));
      if (s.persistentVolumes) this.syncVolumesOfClaim(c.entry.obj);
    }
    if (c.resource === PODS && c.type === 'DELETED' && s.pvProtection) {
      for (const v of c.entry.obj.spec?.volumes ?? []) {
        const claim = v.persistentVolumeClaim?.claimName;
        const e = claim && this.store.get(PVC, c.entry.obj.metadata.namespace, claim);
        if (e) this.releaseProtection(PVC, e, PVC_PROTECTION, (pvc) => this.claimInUse(pvc));
      }
    }
    if (c.resource === JOBS && c.type === 'ADDED' && s.jobs) this.startJob(c.entry);
    if (s.garbageCollector) this.collectGarbage(c);
    if (c.resource === NAMESPACES && c.type !== 'DELETED' && s.namespaces && c.entry.obj.metadata.deletionTimestamp) this.emptyNamespace(c.entry);
  }

  private current(r: ResourceType, e: Entry): Entry | undefined {
    return this.store.get(r, e.obj.metadata.namespace, e.obj.metadata.name);
  }

  private releaseProtection(r: ResourceType, e: Entry, finalizer: string, inUse: (o: any) => boolean): void {
    const cur = this.current(r, e);
    if (!cur?.obj.metadata.deletionTimestamp || !(cur.obj.metadata.finalizers ?? []).includes(finalizer) || inUse(cur.obj)) return;
    const next = cloneObject(cur);
    next.metadata.finalizers = without(next.metadata.finalizers, finalizer);
    this.registry.replace(r, cur, next);
  }

  private claimInUse(pvc: any): boolean {
    return this.store.list(PODS, pvc.metadata.namespace).some((p) =>
      !['Succeeded', 'Failed'].includes(p.obj.status?.phase) && (p.obj.spec?.volumes ?? []).some((v: any) => v.persistentVolumeClaim?.claimName === pvc.metadata.name));
  }

  /** The phase the PV binder would give this volume. */
  private volumePhase(pv: any): string {
    const ref = pv.spec?.claimRef;
    if (!ref) return 'Available';
    // A claimRef without uid only reserves the volume for a claim that is not bound yet.
    if (!ref.uid) return 'Available';
    const claim = this.store.get(PVC, ref.namespace, ref.name)?.obj;
    if (!claim || claim.metadata.uid !== ref.uid) return 'Released';
    if (claim.spec?.volumeName === pv.metadata.name) return 'Bound';
    return pv.status?.phase === 'Bound' ? 'Bound' : 'Available';
  }

  private syncVolume(e: Entry): void {
    const cur = this.current(PV, e);
    if (!cur || cur.obj.status?.phase === 'Failed') return;
    const phase = this.volumePhase(cur.obj);
    if (cur.obj.status?.phase === phase) return;
    this.registry.replace(PV, cur, { ...cloneObject(cur), status: { ...cur.obj.status, phase, lastPhaseTransitionTime: now() } }, { subresource: 'status' });
  }

  private syncVolumesOfClaim(pvc: any): void {
    for (const e of this.store.all(PV)) {
      const ref = e.obj.spec?.claimRef;
      if (ref?.namespace === pvc.metadata.namespace && ref?.name === pvc.metadata.name) this.syncVolume(e);
    }
    const cur = this.store.get(PVC, pvc.metadata.namespace, pvc.metadata.name);
    if (cur?.obj.spec?.volumeName && cur.obj.status?.phase === 'Bound' && !this.store.get(PV, undefined, cur.obj.spec.volumeName)) {
      this.registry.replace(PVC, cur, { ...cloneObject(cur), status: { ...cur.obj.status, phase: 'Lost' } }, { subresource: 'status' });
    }
  }

  private startJob(e: Entry): void {
    const cur = this.current(JOBS, e);
    if (!cur || cur.obj.status?.startTime || cur.obj.spec?.suspend) return;
    this.registry.replace(JOBS, cur, { ...cloneObject(cur), status: { ...cur.obj.status, startTime: now(), active: 1, ready: 0, terminating: 0, uncountedTerminatedPods: {} } }, { subresource: 'status' });
  }

  private ownerExists(dependent: any, ref: any): boolean {
    const r = resourceForKind(ref.apiVersion, ref.kind);
    if (!r) return true;
    const owner = this.store.get(r, r.namespaced ? dependent.metadata.namespace : undefined, ref.name);
    return !!owner && owner.obj.metadata.uid === ref.uid;
  }

  private *dependentsOf(uid: string): Generator<[ResourceType, Entry]> {
    for (const [r, namespace, name] of this.dependents.get(uid)?.values() ?? []) {
      const e = this.store.get(r, namespace, name);
      if (e) yield [r, e];
    }
  }

  private collectGarbage(c: Change): void {
    const meta = c.entry.obj.metadata;
    if (c.type === 'DELETED') {
      for (const [r, e] of [...this.dependentsOf(meta.uid)]) this.collectIfOrphaned(r, e);
      // An owner deleted in the foreground finishes once its last dependent is gone.
      for (const ref of meta.ownerReferences ?? []) {
        const r = resourceForKind(ref.apiVersion, ref.kind);
        const owner = r && this.store.get(r, r.namespaced ? meta.namespace : undefined, ref.name);
        if (r && owner && owner.obj.metadata.uid === ref.uid) this.collectGarbage({ rv: owner.rv, type: 'MODIFIED', resource: r, entry: owner });
      }
      return;
    }
    if (c.type === 'ADDED' && (meta.ownerReferences ?? []).length) this.collectIfOrphaned(c.resource, c.entry);
    const cur = this.current(c.resource, c.entry);
    const finalizers: string[] = cur?.obj.metadata.deletionTimestamp ? cur.obj.metadata.finalizers ?? [] : [];
    if (finalizers.includes('orphan')) {
      for (const [r, e] of [...this.dependentsOf(meta.uid)]) {
        const next = cloneObject(e);
        next.metadata.ownerReferences = next.metadata.ownerReferences.filter((o: any) => o.uid !== meta.uid);
        if (!next.metadata.ownerReferences.length) delete next.metadata.ownerReferences;
        this.registry.replace(r, e, next);
      }
      this.dropFinalizer(c.resource, 'orphan', c.entry);
    } else if (finalizers.includes('foregroundDeletion')) {
      const deps = [...this.dependentsOf(meta.uid)];
      for (const [r, e] of deps) {
        if (!e.obj.metadata.deletionTimestamp) this.registry.delete(r, e.obj.metadata.namespace, e.obj.metadata.name, { propagationPolicy: 'Foreground' });
      }
      if (deps.every(([r, e]) => !this.current(r, e))) this.dropFinalizer(c.resource, 'foregroundDeletion', c.entry);
    }
  }

  private collectIfOrphaned(r: ResourceType, e: Entry): void {
    const cur = this.current(r, e);
    if (!cur || cur.obj.metadata.deletionTimestamp) return;
    const refs: any[] = cur.obj.metadata.ownerReferences ?? [];
    const live = refs.filter((ref) => this.ownerExists(cur.obj, ref));
    if (live.length === refs.length) return;
    if (live.length === 0) {
      this.registry.delete(r, cur.obj.metadata.namespace, cur.obj.metadata.name, { propagationPolicy: 'Background' });
    } else {
      const next = cloneObject(cur);
      next.metadata.ownerReferences = live;
      this.registry.replace(r, cur, next);
    }
  }

  private dropFinalizer(r: ResourceType, finalizer: string, e: Entry): void {
    const cur = this.current(r, e);
    if (!cur || !(cur.obj.metadata.finalizers ?? []).includes(finalizer)) return;
    const next = cloneObject(cur);
    next.metadata.finalizers = without(next.metadata.finalizers, finalizer);
    this.registry.replace(r, cur, next);
  }

  private emptyNamespace(e: Entry): void {
    const ns = e.obj.metadata.name;
    let remaining = 0;
    for (const r of RESOURCES) {
      if (!r.namespaced) continue;
      for (const item of this.store.list(r, ns)) {
        remaining++;
        if (!item.obj.metadata.deletionTimestamp) this.registry.delete(r, ns, item.obj.metadata.name);
      }
    }
    const cur = this.current(NAMESPACES, e);
    if (!cur) return;
    if (remaining > 0 && RESOURCES.some((r) => r.namespaced && this.store.list(r, ns).length)) return;
    if ((cur.obj.spec?.finalizers ?? []).includes('kubernetes')) {
      this.registry.replace(NAMESPACES, cur, { ...cloneObject(cur), spec: { ...cur.obj.spec, finalizers: without(cur.obj.spec.finalizers, 'kubernetes') } });
    }
  }

  /**
   * Binds a claim to a volume as the PV binder would: claimRef on the PV,
   * volumeName on the claim, both Bound. Synchronous; throws if either is missing,
   * or if the volume is being deleted (the binder never binds one).
   */
  bindClaim(pvName: string, claim: { namespace: string; name: string }): void {
    const pv = this.registry.get(PV, undefined, pvName);
    const pvc = this.registry.get(PVC, claim.namespace, claim.name);
    // The binder skips such a volume (FindMatchingVolume), and refuses it to a claim that names it (checkVolumeSatisfyClaim).
    if (pv.obj.metadata.deletionTimestamp) throw new Error(`the volume is marked for deletion "${pvName}"`);
    const nextPv = cloneObject(pv);
    nextPv.spec.claimRef = { kind: 'PersistentVolumeClaim', namespace: claim.namespace, name: claim.name, uid: pvc.obj.metadata.uid, apiVersion: 'v1', resourceVersion: pvc.obj.metadata.resourceVersion };
    nextPv.metadata.annotations = { ...nextPv.metadata.annotations, 'pv.kubernetes.io/bound-by-controller': 'yes' };
    const boundPv = this.registry.replace(PV, pv, nextPv);
    this.registry.replace(PV, boundPv, { ...cloneObject(boundPv), status: { ...boundPv.obj.status, phase: 'Bound', lastPhaseTransitionTime: now() } }, { subresource: 'status' });
    const nextPvc = cloneObject(pvc);
    nextPvc.spec.volumeName = pvName;
    nextPvc.metadata.annotations = { ...nextPvc.metadata.annotations, 'pv.kubernetes.io/bind-completed': 'yes', 'pv.kubernetes.io/bound-by-controller': 'yes' };
    const boundPvc = this.registry.replace(PVC, pvc, nextPvc);
    this.registry.replace(PVC, boundPvc, {
      ...cloneObject(boundPvc),
      status: { phase: 'Bound', accessModes: pv.obj.spec.accessModes, capacity: pv.obj.spec.capacity },
    }, { subresource: 'status' });
  }

  /** Marks a Job finished as the job controller would after its pod succeeded or failed. */
  finishJob(namespace: string, name: string, outcome: 'Complete' | 'Failed', message?: string): void {
    const job = this.registry.get(JOBS, namespace, name);
    const t = now();
    const cond = (type: string, reason: string, msg: string) => ({ type, status: 'True', lastProbeTime: t, lastTransitionTime: t, reason, message: msg });
    const status = outcome === 'Complete'
      ? {
        ...job.obj.status,
        startTime: job.obj.status?.startTime ?? t,
        completionTime: t,
        active: 0,
        ready: 0,
        terminating: 0,
        succeeded: job.obj.spec.completions ?? 1,
        conditions: [cond('SuccessCriteriaMet', 'CompletionsReached', 'Reached expected number of succeeded pods'), cond('Complete', 'CompletionsReached', message ?? 'Reached expected number of succeeded pods')],
      }
      : {
        ...job.obj.status,
        startTime: job.obj.status?.startTime ?? t,
        active: 0,
        ready: 0,
        terminating: 0,
        failed: (job.obj.status?.failed ?? 0) + 1,
        conditions: [cond('FailureTarget', 'BackoffLimitExceeded', 'Job has reached the specified backoff limit'), cond('Failed', 'BackoffLimitExceeded', message ?? 'Job has reached the specified backoff limit')],
      };
    this.registry.replace(JOBS, job, { ...cloneObject(job), status }, { subresource: 'status' });
  }
}
