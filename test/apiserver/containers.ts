/**
 * Containers as the core validation checks them (validateContainerCommon,
 * validateContainers, validateInitContainers): DNS-label names unique across
 * containers and init containers, an image, ports, environment, mounts,
 * pull policy, resources (requests at most limits), security context, probes.
 */
import { duplicate, forbiddenField, invalidValue, required, unsupported } from './causes';
import { configKeyMessages, dnsLabelProblems, qualifiedNameProblems, subdomainProblems } from './names';
import { volumeMountsProblems } from './pod-volumes';
import { PORT_RANGE, lifecycleProblems, portNameMessages, probeProblems } from './probes';
import { Quantity, compareQuantities, isWhole, parseQuantity } from './quantity';
import { StatusCause } from './status';

const PROTOCOLS = ['SCTP', 'TCP', 'UDP'];
const PULL_POLICIES = ['Always', 'IfNotPresent', 'Never'];
const MESSAGE_POLICIES = ['File', 'FallbackToLogsOnError'];
const ID_RANGE = 'must be between 0 and 2147483647, inclusive';

const set = (v: unknown) => v !== undefined && v !== null;

/** validateContainerPorts: names IANA service names unique in the container, ports in range, a protocol. */
function portsProblems(field: string, ports: any[] | undefined): StatusCause[] {
  const out: StatusCause[] = [];
  const names = new Set<string>();
  (ports ?? []).forEach((p: any, i: number) => {
    const f = `${field}[${i}]`;
    if (p?.name) {
      const msgs = portNameMessages(p.name);
      if (msgs.length) out.push(...msgs.map((msg) => invalidValue(`${f}.name`, p.name, msg)));
      else if (names.has(p.name)) out.push(duplicate(`${f}.name`, p.name));
      else names.add(p.name);
    }
    if (!p?.containerPort) out.push(required(`${f}.containerPort`));
    else if (p.containerPort < 1 || p.containerPort > 65535) out.push(invalidValue(`${f}.containerPort`, p.containerPort, PORT_RANGE));
    if (p?.hostPort && (p.hostPort < 1 || p.hostPort > 65535)) out.push(invalidValue(`${f}.hostPort`, p.hostPort, PORT_RANGE));
    if (!p?.protocol) out.push(required(`${f}.protocol`));
    else if (!PROTOCOLS.includes(p.protocol)) out.push(unsupported(`${f}.protocol`, p.protocol, PROTOCOLS));
  });
  return out;
}

/** checkHostPortConflicts: one protocol/hostIP/hostPort per pod. */
function hostPortConflicts(field: string, containers: any[], seen = new Set<string>()): StatusCause[] {
  const out: StatusCause[] = [];
  containers.forEach((c: any, i: number) => (c?.ports ?? []).forEach((p: any, j: number) => {
    if (!p?.hostPort) return;
    const key = `${p.protocol ?? ''}/${p.hostIP ?? ''}/${p.hostPort}`;
    if (seen.has(key)) out.push(duplicate(`${field}[${i}].ports[${j}].hostPort`, key));
    seen.add(key);
  }));
  return out;
}

/** Env var names as the RelaxedEnvironmentVariableValidation gate (on by default since 1.32) allows them. */
function envNameMessages(name: string): string[] {
  return /^[\x20-\x7e]+$/.test(name) && !name.includes('=')
    ? [] : ["a valid environment variable name must consist only of printable ASCII characters other than '='"];
}

const ENV_FIELD_PATHS = ['metadata.name', 'metadata.namespace', 'metadata.uid', 'spec.nodeName', 'spec.serviceAccountName',
  'status.hostIP', 'status.hostIPs', 'status.podIP', 'status.podIPs'];
/** Field labels the v1 downward API converts; only ENV_FIELD_PATHS (and subscripted labels/annotations) may go into env. */
const DOWNWARD_LABELS = [...ENV_FIELD_PATHS, 'metadata.annotations', 'metadata.labels', 'spec.restartPolicy', 'spec.schedulerName', 'status.phase'];
const RESOURCE_FIELDS = ['limits.cpu', 'limits.ephemeral-storage', 'limits.memory', 'requests.cpu', 'requests.ephemeral-storage', 'requests.memory'];

/** validateObjectFieldSelector for env (fieldRef). */
function fieldRefProblems(field: string, ref: any): StatusCause[] {
  if (!ref.apiVersion) return [required(`${field}.apiVersion`)];
  if (!ref.fieldPath) return [required(`${field}.fieldPath`)];
  const path: string = ref.fieldPath;
  const convert = (why: string) => [invalidValue(`${field}.fieldPath`, path, `error converting fieldPath: ${why}`)];
  if (ref.apiVersion !== 'v1') return convert(`unsupported pod version: ${ref.apiVersion}`);
  const sub = /^(.*)\['(.*)'\]$/.exec(path);
  if (sub) {
    if (sub[1] === 'metadata.annotations') return qualifiedNameProblems(field, sub[2].toLowerCase());
    if (sub[1] === 'metadata.labels') return qualifiedNameProblems(field, sub[2]);
    return convert(`field label does not support subscript: ${path}`);
  }
  const label = path === 'spec.host' ? 'spec.nodeName' : path;
  if (!DOWNWARD_LABELS.includes(label)) return convert(`field label not supported: ${path}`);
  return ENV_FIELD_PATHS.includes(label) ? [] : [unsupported(`${field}.fieldPath`, label, ENV_FIELD_PATHS)];
}

function keySelectorProblems(field: string, ref: any): StatusCause[] {
  const out = subdomainProblems(`${field}.name`, ref.name ?? '');
  if (!ref.key) out.push(required(`${field}.key`));
  else out.push(...configKeyMessages(ref.key).map((msg) => invalidValue(`${field}.key`, ref.key, msg)));
  return out;
}

/** ValidateEnv with validateEnvVarValueFrom. */
function envProblems(field: string, env: any[] | undefined): StatusCause[] {
  const out: StatusCause[] = [];
  (env ?? []).forEach((e: any, i: number) => {
    const f = `${field}[${i}]`;
    if (!e?.name) out.push(required(`${f}.name`));
    else out.push(...envNameMessages(e.name).map((msg) => invalidValue(`${f}.name`, e.name, msg)));
    const from = e?.valueFrom;
    if (!from) return;
    const vf = `${f}.valueFrom`;
    const sources = ['fieldRef', 'resourceFieldRef', 'configMapKeyRef', 'secretKeyRef'].filter((s) => set(from[s]));
    if (from.fieldRef) out.push(...fieldRefProblems(`${vf}.fieldRef`, from.fieldRef));
    if (from.resourceFieldRef) {
      const r = from.resourceFieldRef.resource;
      if (!r) out.push(required(`${vf}.resourceFieldRef.resource`));
      else if (!RESOURCE_FIELDS.includes(r) && !/^(requests|limits)\.hugepages-/.test(r)) out.push(unsupported(`${vf}.resourceFieldRef.resource`, r, RESOURCE_FIELDS));
    }
    if (from.configMapKeyRef) out.push(...keySelectorProblems(`${vf}.configMapKeyRef`, from.configMapKeyRef));
    if (from.secretKeyRef) out.push(...keySelectorProblems(`${vf}.secretKeyRef`, from.secretKeyRef));
    if (sources.length === 0) out.push(invalidValue(vf, '', 'must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`'));
    else if (e.value) out.push(invalidValue(vf, '', 'may not be specified when `value` is not empty'));
    else if (sources.length > 1) out.push(invalidValue(vf, '', 'may not have more than one field specified at a time'));
  });
  return out;
}

/** ValidateEnvFrom: a prefix that is a valid name, exactly one of configMapRef and secretRef. */
function envFromProblems(field: string, envFrom: any[] | undefined): StatusCause[] {
  const out: StatusCause[] = [];
  (envFrom ?? []).forEach((e: any, i: number) => {
    const f = `${field}[${i}]`;
    if (e?.prefix) out.push(...envNameMessages(e.prefix).map((msg) => invalidValue(`${f}.prefix`, e.prefix, msg)));
    const refs = ['configMapRef', 'secretRef'].filter((r) => set(e?.[r]));
    for (const r of refs) {
      if (!e[r].name) out.push(required(`${f}.${r}.name`));
      else out.push(...subdomainProblems(`${f}.${r}.name`, e[r].name));
    }
    // The real validation names the list here, not the entry.
    if (refs.length === 0) out.push(invalidValue(field, '', 'must specify one of: `configMapRef` or `secretRef`'));
    else if (refs.length > 1) out.push(invalidValue(field, '', 'may not have more than one field specified at a time'));
  });
  return out;
}

const isHugePages = (name: string) => name.startsWith('hugepages-');
/** Native resources (no domain, or a kubernetes.io domain) other than huge pages may be overcommitted. */
const overcommittable = (name: string) => (!name.includes('/') || name.includes('kubernetes.io/')) && !isHugePages(name);

function resourceNameProblems(field: string, name: string): StatusCause[] {
  const out = qualifiedNameProblems(field, name);
  if (out.length) return out;
  if (!name.includes('/') && !['cpu', 'memory', 'ephemeral-storage'].includes(name) && !isHugePages(name)) {
    out.push(invalidValue(field, name, 'must be a standard resource for containers'));
  }
  return out;
}

function quantityProblems(field: string, name: string, value: unknown): { q: Quantity; problems: StatusCause[] } {
  const q = parseQuantity(value);
  const problems: StatusCause[] = [];
  if (q.num < 0n) problems.push(invalidValue(field, String(value), 'must be greater than or equal to 0'));
  if (name.includes('/') && !overcommittable(name) && !isWhole(q)) problems.push(invalidValue(field, String(value), 'must be an integer'));
  return { q, problems };
}

/** ValidateContainerResourceRequirements: standard names, non-negative values, requests at most limits. */
function resourcesProblems(field: string, resources: any): StatusCause[] {
  const out: StatusCause[] = [];
  const limits = new Map<string, { q: Quantity; text: string }>();
  const computeSet = { limits: false, requests: false, hugePages: false };
  for (const [name, value] of Object.entries<unknown>(resources?.limits ?? {})) {
    const f = `${field}.limits[${name}]`;
    const { q, problems } = quantityProblems(f, name, value);
    out.push(...resourceNameProblems(f, name), ...problems);
    limits.set(name, { q, text: String(value) });
    if (isHugePages(name)) computeSet.hugePages = true;
    if (name === 'cpu' || name === 'memory') computeSet.limits = true;
  }
  for (const [name, value] of Object.entries<unknown>(resources?.requests ?? {})) {
    const f = `${field}.requests[${name}]`;
    const { q, problems } = quantityProblems(f, name, value);
    out.push(...resourceNameProblems(f, name), ...problems);
    const limit = limits.get(name);
    if (limit) {
      const cmp = compareQuantities(q, limit.q);
      if (cmp !== 0 && !overcommittable(name)) out.push(invalidValue(`${field}.requests`, String(value), `must be equal to ${name} limit of ${limit.text}`));
      else if (cmp > 0) out.push(invalidValue(`${field}.requests`, String(value), `must be less than or equal to ${name} limit of ${limit.text}`));
    } else if (!overcommittable(name)) {
      out.push(required(`${field}.limits`, 'Limit must be set for non overcommitable resources'));
    }
    if (isHugePages(name)) computeSet.hugePages = true;
    if (name === 'cpu' || name === 'memory') computeSet.requests = true;
  }
  if (computeSet.hugePages && !computeSet.limits && !computeSet.requests) out.push(forbiddenField(field, 'HugePages require cpu or memory'));
  return out;
}

const idProblems = (field: string, id: unknown) =>
  (typeof id === 'number' && (id < 0 || id > 2147483647) ? [invalidValue(field, id, ID_RANGE)] : []);

const SECCOMP_TYPES = ['Localhost', 'RuntimeDefault', 'Unconfined'];

/** validateSeccompProfileField (container and pod security contexts). */
function seccompProblems(field: string, profile: any): StatusCause[] {
  if (!profile) return [];
  if (!profile.type) return [required(`${field}.type`, 'type is required when seccompProfile is set')];
  if (!SECCOMP_TYPES.includes(profile.type)) return [unsupported(`${field}.type`, profile.type, SECCOMP_TYPES)];
  if (profile.type === 'Localhost' && !set(profile.localhostProfile)) return [required(`${field}.localhostProfile`, 'must be set when seccomp type is Localhost')];
  if (profile.type !== 'Localhost' && set(profile.localhostProfile)) return [invalidValue(`${field}.localhostProfile`, profile, 'can only be set when seccomp type is Localhost')];
  return [];
}

/** ValidateSecurityContext (a cluster that allows privileged containers, as kubeadm's does). */
function securityContextProblems(field: string, sc: any): StatusCause[] {
  if (!sc) return [];
  const out = [...idProblems(`${field}.runAsUser`, sc.runAsUser), ...idProblems(`${field}.runAsGroup`, sc.runAsGroup)];
  if (set(sc.procMount) && !['Default', 'Unmasked'].includes(sc.procMount)) out.push(unsupported(`${field}.procMount`, sc.procMount, ['Default', 'Unmasked']));
  out.push(...seccompProblems(`${field}.seccompProfile`, sc.seccompProfile));
  if (sc.allowPrivilegeEscalation === false) {
    if (sc.privileged === true) out.push(invalidValue(field, sc, 'cannot set `allowPrivilegeEscalation` to false and `privileged` to true'));
    if ((sc.capabilities?.add ?? []).includes('CAP_SYS_ADMIN')) {
      out.push(invalidValue(field, sc, 'cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN'));
    }
  }
  return out;
}

/** validateContainerCommon: what every container (regular or init) must satisfy. */
function containerProblems(field: string, c: any, volumes: ReadonlyMap<string, any>): StatusCause[] {
  const out: StatusCause[] = [];
  if (!c?.name) out.push(required(`${field}.name`));
  else out.push(...dnsLabelProblems(`${field}.name`, c.name));
  if (!c?.image) out.push(required(`${field}.image`));
  const tmp = c?.terminationMessagePolicy;
  if (!tmp) out.push(required(`${field}.terminationMessagePolicy`));
  else if (!MESSAGE_POLICIES.includes(tmp)) out.push(unsupported(`${field}.terminationMessagePolicy`, tmp, MESSAGE_POLICIES));
  out.push(
    ...portsProblems(`${field}.ports`, c?.ports),
    ...envProblems(`${field}.env`, c?.env),
    ...envFromProblems(`${field}.envFrom`, c?.envFrom),
    ...volumeMountsProblems(`${field}.volumeMounts`, c, volumes),
  );
  if (!c?.imagePullPolicy) out.push(required(`${field}.imagePullPolicy`));
  else if (!PULL_POLICIES.includes(c.imagePullPolicy)) out.push(unsupported(`${field}.imagePullPolicy`, c.imagePullPolicy, PULL_POLICIES));
  out.push(...resourcesProblems(`${field}.resources`, c?.resources), ...securityContextProblems(`${field}.securityContext`, c?.securityContext));
  return out;
}

/** What the pod gives its containers: the volumes they may mount and the grace period their hooks must fit in. */
export interface PodContext {
  readonly volumes: ReadonlyMap<string, any>;
  readonly gracePeriod?: number;
}

/** validateContainers: at least one, names unique, probes and hooks; no per-container restartPolicy. */
export function containersProblems(field: string, containers: any[] | undefined, pod: PodContext): StatusCause[] {
  if (!Array.isArray(containers) || containers.length === 0) return [required(field)];
  const out: StatusCause[] = [];
  const names = new Set<string>();
  containers.forEach((c: any, i: number) => {
    const f = `${field}[${i}]`;
    out.push(...containerProblems(f, c, pod.volumes));
    if (names.has(c?.name)) out.push(duplicate(`${f}.name`, c?.name ?? ''));
    names.add(c?.name);
    if (c?.lifecycle) out.push(...lifecycleProblems(`${f}.lifecycle`, c.lifecycle, pod.gracePeriod));
    for (const probe of ['livenessProbe', 'readinessProbe', 'startupProbe'] as const) out.push(...probeProblems(`${f}.${probe}`, probe, c?.[probe], pod.gracePeriod));
    if (set(c?.restartPolicy)) out.push(forbiddenField(`${f}.restartPolicy`, 'may not be set for non-init containers'));
  });
  return [...out, ...hostPortConflicts(field, containers)];
}

/** validateInitContainers: names unique across init and regular containers; probes only for sidecars (restartPolicy Always). */
export function initContainersProblems(field: string, inits: any[] | undefined, regular: any[] | undefined, pod: PodContext): StatusCause[] {
  const out: StatusCause[] = [];
  const names = new Set<string>((regular ?? []).map((c: any) => c?.name));
  (inits ?? []).forEach((c: any, i: number) => {
    const f = `${field}[${i}]`;
    out.push(...containerProblems(f, c, pod.volumes));
    const sidecar = c?.restartPolicy === 'Always';
    if (set(c?.restartPolicy) && !sidecar) out.push(unsupported(`${f}.restartPolicy`, c.restartPolicy, ['Always']));
    if (names.has(c?.name)) out.push(duplicate(`${f}.name`, c?.name ?? ''));
    else if (c?.name) names.add(c.name);
    // Init containers run one at a time, so each is checked alone (the real errors then name index 0).
    out.push(...hostPortConflicts(field, [c]));
    if (sidecar) {
      if (c.lifecycle) out.push(...lifecycleProblems(`${f}.lifecycle`, c.lifecycle, pod.gracePeriod));
      for (const probe of ['livenessProbe', 'readinessProbe', 'startupProbe'] as const) out.push(...probeProblems(`${f}.${probe}`, probe, c[probe], pod.gracePeriod));
    } else {
      for (const hook of ['lifecycle', 'livenessProbe', 'readinessProbe', 'startupProbe']) {
        if (set(c?.[hook])) out.push(forbiddenField(`${f}.${hook}`, 'may not be set for init containers without restartPolicy=Always'));
      }
    }
  });
  return out;
}

/** validatePodSpecSecurityContext: ids in range, sysctls, fsGroupChangePolicy, seccomp. */
export function podSecurityContextProblems(field: string, spec: any): StatusCause[] {
  const sc = spec?.securityContext;
  if (!sc) return [];
  const out = [...idProblems(`${field}.fsGroup`, sc.fsGroup), ...idProblems(`${field}.runAsUser`, sc.runAsUser), ...idProblems(`${field}.runAsGroup`, sc.runAsGroup)];
  (sc.supplementalGroups ?? []).forEach((g: unknown, i: number) => out.push(...idProblems(`${field}.supplementalGroups[${i}]`, g)));
  // In the internal types hostPID lives in the security context, so that is where the error points.
  if (spec.shareProcessNamespace === true && spec.hostPID === true) {
    out.push(invalidValue(`${field}.shareProcessNamespace`, true, 'ShareProcessNamespace and HostPID cannot both be enabled'));
  }
  const sysctls = new Set<string>();
  (sc.sysctls ?? []).forEach((s: any, i: number) => {
    const f = `${field}.sysctls[${i}].name`;
    if (!s?.name) {out.push(required(f));} else if (s.name.length > 253 || !/^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$/.test(s.name)) {
      out.push(invalidValue(f, s.name, 'must have at most 253 characters and match regex ^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$'));
    } else if (sysctls.has(s.name)) {out.push(duplicate(f, s.name));}
    sysctls.add(s?.name);
  });
  if (set(sc.fsGroupChangePolicy) && !['Always', 'OnRootMismatch'].includes(sc.fsGroupChangePolicy)) {
    out.push(unsupported(`${field}.fsGroupChangePolicy`, sc.fsGroupChangePolicy, ['Always', 'OnRootMismatch']));
  }
  return [...out, ...seccompProblems(`${field}.seccompProfile`, sc.seccompProfile)];
}
