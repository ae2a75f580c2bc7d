/**
 * A pod spec as the core validation checks it (ValidatePodSpec), in a Pod
 * (validatePodMetadataAndSpec, ValidatePodCreate) and in a workload's pod
 * template (ValidatePodTemplateSpec). Checks run on the defaulted object, as
 * in the real server, so fields the defaulting fills are never missing.
 */
import { forbiddenField, invalidValue, required, unsupported } from './causes';
import { containersProblems, initContainersProblems, podSecurityContextProblems } from './containers';
import { annotationsProblems, dnsLabelProblems, labelsProblems, qualifiedNameProblems, subdomainProblems } from './names';
import { volumesProblems } from './pod-volumes';
import { affinityProblems, labelSelectorProblems, tolerationsProblems } from './scheduling';
import { StatusCause } from './status';

const RESTART_POLICIES = ['Always', 'OnFailure', 'Never'];
const DNS_POLICIES = ['ClusterFirstWithHostNet', 'ClusterFirst', 'Default', 'None'];
const MAX_INT32 = 2147483647;

const set = (v: unknown) => v !== undefined && v !== null;

function enumProblems(field: string, value: unknown, allowed: string[]): StatusCause[] {
  if (!value) return [required(field)];
  return allowed.includes(value as string) ? [] : [unsupported(field, value, allowed)];
}

/** validatePodHostNetworkDeps: with the host's network a port is the host's port. */
function hostNetworkProblems(field: string, spec: any, isPod: boolean): StatusCause[] {
  if (spec?.hostNetwork !== true) return [];
  return (spec.containers ?? []).flatMap((c: any, i: number) => (c?.ports ?? []).flatMap((p: any, j: number) => {
    const hostPort = p?.hostPort ?? 0;
    return (isPod || hostPort !== 0) && hostPort !== p?.containerPort
      ? [invalidValue(`${field}.containers[${i}].ports[${j}].hostPort`, hostPort, 'must match `containerPort` when `hostNetwork` is true')] : [];
  }));
}

function topologySpreadProblems(field: string, constraints: any[] | undefined): StatusCause[] {
  return (constraints ?? []).flatMap((c: any, i: number) => {
    const f = `${field}[${i}]`;
    const out: StatusCause[] = [];
    if (!(c?.maxSkew > 0)) out.push(invalidValue(`${f}.maxSkew`, c?.maxSkew ?? 0, 'must be greater than zero'));
    if (!c?.topologyKey) out.push(required(`${f}.topologyKey`, 'can not be empty'));
    if (!['DoNotSchedule', 'ScheduleAnyway'].includes(c?.whenUnsatisfiable)) {
      out.push(unsupported(`${f}.whenUnsatisfiable`, c?.whenUnsatisfiable ?? '', ['DoNotSchedule', 'ScheduleAnyway']));
    }
    return [...out, ...labelSelectorProblems(`${f}.labelSelector`, c?.labelSelector)];
  });
}

/** ValidatePodSpec. `isPod` for a Pod's own spec rather than a template's. */
function podSpecProblems(field: string, spec: any, isPod = false): StatusCause[] {
  const s = spec ?? {};
  const out: StatusCause[] = [];
  if (!set(s.terminationGracePeriodSeconds)) out.push(required(`${field}.terminationGracePeriodSeconds`));
  const grace = typeof s.terminationGracePeriodSeconds === 'number' ? s.terminationGracePeriodSeconds : undefined;
  const volumes = volumesProblems(`${field}.volumes`, s.volumes);
  const pod = { volumes: volumes.valid, gracePeriod: grace };
  out.push(
    ...volumes.problems,
    ...containersProblems(`${field}.containers`, s.containers, pod),
    ...initContainersProblems(`${field}.initContainers`, s.initContainers, s.containers, pod),
    ...hostNetworkProblems(field, s, isPod),
    ...enumProblems(`${field}.restartPolicy`, s.restartPolicy, RESTART_POLICIES),
    ...enumProblems(`${field}.dnsPolicy`, s.dnsPolicy, DNS_POLICIES),
    ...labelsProblems(`${field}.nodeSelector`, s.nodeSelector),
    ...podSecurityContextProblems(`${field}.securityContext`, s),
    ...affinityProblems(`${field}.affinity`, s.affinity),
    ...topologySpreadProblems(`${field}.topologySpreadConstraints`, s.topologySpreadConstraints),
    ...tolerationsProblems(`${field}.tolerations`, s.tolerations),
  );
  (s.imagePullSecrets ?? []).forEach((ref: any, i: number) => {
    if (Object.keys(ref ?? {}).some((k) => k !== 'name')) out.push(invalidValue(`${field}.imagePullSecrets[${i}]`, ref, 'only name may be set'));
  });
  (s.readinessGates ?? []).forEach((g: any, i: number) => out.push(...qualifiedNameProblems(`${field}.readinessGates[${i}].conditionType`, g?.conditionType ?? '')));
  for (const name of ['serviceAccountName', 'nodeName', 'priorityClassName'] as const) {
    if (s[name]) out.push(...subdomainProblems(`${field}.${name}`, s[name]));
  }
  if (set(s.runtimeClassName)) out.push(...subdomainProblems(`${field}.runtimeClassName`, s.runtimeClassName));
  for (const name of ['hostname', 'subdomain'] as const) if (s[name]) out.push(...dnsLabelProblems(`${field}.${name}`, s[name]));
  if (set(s.activeDeadlineSeconds) && !(s.activeDeadlineSeconds >= 1 && s.activeDeadlineSeconds <= MAX_INT32)) {
    out.push(invalidValue(`${field}.activeDeadlineSeconds`, s.activeDeadlineSeconds, `must be between 1 and ${MAX_INT32}, inclusive`));
  }
  if (set(s.preemptionPolicy)) out.push(...enumProblems(`${field}.preemptionPolicy`, s.preemptionPolicy, ['PreemptLowerPriority', 'Never']));
  if (set(s.os)) {
    if (!s.os.name) out.push(required(`${field}.os.name`, 'cannot be empty'));
    else if (!['linux', 'windows'].includes(s.os.name)) out.push(unsupported(`${field}.os`, s.os.name, ['linux', 'windows']));
  }
  return out;
}

/** ValidatePodTemplateSpec: the template's labels and annotations (named without `metadata`, as the real errors name them) and its spec. */
export function podTemplateProblems(field: string, template: any): StatusCause[] {
  const out = [
    ...labelsProblems(`${field}.labels`, template?.metadata?.labels),
    ...annotationsProblems(`${field}.annotations`, template?.metadata?.annotations),
    ...podSpecProblems(`${field}.spec`, template?.spec),
  ];
  if (template?.spec?.ephemeralContainers?.length) out.push(forbiddenField(`${field}.spec.ephemeralContainers`, 'ephemeral containers not allowed in pod template'));
  return out;
}

/** A Pod: its spec, plus the checks only a Pod gets (and, `creating`, those only its create gets). */
export function podProblems(pod: any, creating: boolean): StatusCause[] {
  const spec = pod.spec ?? {};
  const out = podSpecProblems('spec', spec, true);
  if (!spec.serviceAccountName) {
    (spec.volumes ?? []).forEach((v: any, i: number) => (v?.projected?.sources ?? []).forEach((src: any, j: number) => {
      if (src?.serviceAccountToken) {
        out.push(forbiddenField(`spec.volumes[${i}].projected.sources[${j}].serviceAccountToken`, 'must not be specified when serviceAccountName is not set'));
      }
    }));
  }
  for (const list of ['containers', 'initContainers'] as const) {
    (spec[list] ?? []).forEach((c: any, i: number) => {
      if (typeof c?.image === 'string' && c.image !== c.image.trim()) {
        out.push(invalidValue(`spec.${list}[${i}].image`, c.image, 'must not have leading or trailing whitespace'));
      }
    });
  }
  if (!creating) return out;
  if (spec.ephemeralContainers?.length) out.push(forbiddenField('spec.ephemeralContainers', 'cannot be set on create'));
  if (spec.nodeName && spec.schedulingGates?.length) out.push(forbiddenField('spec.nodeName', 'cannot be set until all schedulingGates have been cleared'));
  return out;
}
