/**
 * The workloads that carry pod templates, as the apps and batch validation
 * check them: ValidateDaemonSetSpec, ValidateDeploymentSpec (with
 * ValidatePodTemplateSpecForReplicaSet) and ValidateJobSpec. Each validates
 * its template as a pod template and adds its own restart policy rule.
 */
import { forbiddenField, invalidValue, nonNegativeProblems, required, unsupported } from './causes';
import { podTemplateProblems } from './pod-spec';
import { labelSelectorProblems } from './scheduling';
import { StatusCause } from './status';

const PERCENT_MSG = "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')";

/** Whether a LabelSelector object (matchLabels, matchExpressions) selects these labels; no selector selects nothing. */
function selects(selector: any, labels: Record<string, string>): boolean {
  if (!selector) return false;
  const byLabels = Object.entries<string>(selector.matchLabels ?? {}).every(([k, v]) => labels[k] === v);
  const byExpressions = (selector.matchExpressions ?? []).every((e: any) => {
    const has = labels[e.key] !== undefined;
    switch (e.operator) {
      case 'In': return has && (e.values ?? []).includes(labels[e.key]);
      case 'NotIn': return !has || !(e.values ?? []).includes(labels[e.key]);
      case 'Exists': return has;
      case 'DoesNotExist': return !has;
      default: return false;
    }
  });
  return byLabels && byExpressions;
}

const emptySelector = (s: any) => !Object.keys(s?.matchLabels ?? {}).length && !(s?.matchExpressions ?? []).length;

function templateMatchProblems(spec: any): StatusCause[] {
  const labels = spec?.template?.metadata?.labels ?? {};
  return selects(spec?.selector, labels) ? [] : [invalidValue('spec.template.metadata.labels', labels, '`selector` does not match template `labels`')];
}

/** The value of an int-or-percent, and whether it is a well-formed one. */
function intOrPercent(v: unknown): { value: number; percent: boolean; valid: boolean } {
  if (typeof v === 'number') return { value: v, percent: false, valid: true };
  const m = /^(\d+)%$/.exec(String(v ?? ''));
  return m ? { value: Number(m[1]), percent: true, valid: true } : { value: 0, percent: false, valid: false };
}

/** ValidatePositiveIntOrPercent and IsNotMoreThan100Percent. */
function intOrPercentProblems(field: string, v: unknown, notOver100: boolean): StatusCause[] {
  if (v === undefined || v === null) return [];
  const p = intOrPercent(v);
  if (!p.valid) return [invalidValue(field, v, PERCENT_MSG)];
  const out = p.percent ? [] : nonNegativeProblems(field, p.value);
  if (notOver100 && p.percent && p.value > 100) out.push(invalidValue(field, v, 'must not be greater than 100%'));
  return out;
}

function daemonSetStrategyProblems(strategy: any): StatusCause[] {
  const f = 'spec.updateStrategy';
  switch (strategy?.type) {
    case 'OnDelete': return [];
    case 'RollingUpdate': {
      const ru = strategy.rollingUpdate;
      if (!ru) return [required(`${f}.rollingUpdate`)];
      const out = [
        ...intOrPercentProblems(`${f}.rollingUpdate.maxUnavailable`, ru.maxUnavailable, true),
        ...intOrPercentProblems(`${f}.rollingUpdate.maxSurge`, ru.maxSurge, true),
      ];
      const unavailable = intOrPercent(ru.maxUnavailable ?? 0).value !== 0;
      const surge = intOrPercent(ru.maxSurge ?? 0).value !== 0;
      if (unavailable && surge) out.push(invalidValue(`${f}.rollingUpdate.maxSurge`, ru.maxSurge, 'may not be set when maxUnavailable is non-zero'));
      if (!unavailable && !surge) out.push(required(`${f}.rollingUpdate.maxUnavailable`, 'cannot be 0 when maxSurge is 0'));
      return out;
    }
    default: return [unsupported(f, strategy ?? {}, ['RollingUpdate', 'OnDelete'])];
  }
}

/** ValidateDaemonSetSpec. */
export function daemonSetProblems(ds: any): StatusCause[] {
  const spec = ds.spec ?? {};
  const out = [...labelSelectorProblems('spec.selector', spec.selector), ...templateMatchProblems(spec)];
  if (spec.selector && emptySelector(spec.selector)) out.push(invalidValue('spec.selector', spec.selector, 'empty selector is invalid for daemonset'));
  out.push(...podTemplateProblems('spec.template', spec.template));
  const rp = spec.template?.spec?.restartPolicy ?? '';
  if (rp !== 'Always') out.push(unsupported('spec.template.spec.restartPolicy', rp, ['Always']));
  if (spec.template?.spec?.activeDeadlineSeconds !== undefined) {
    out.push(forbiddenField('spec.template.spec.activeDeadlineSeconds', 'activeDeadlineSeconds in DaemonSet is not Supported'));
  }
  out.push(...nonNegativeProblems('spec.minReadySeconds', spec.minReadySeconds), ...daemonSetStrategyProblems(spec.updateStrategy));
  return [...out, ...nonNegativeProblems('spec.revisionHistoryLimit', spec.revisionHistoryLimit)];
}

function deploymentStrategyProblems(strategy: any): StatusCause[] {
  const f = 'spec.strategy';
  switch (strategy?.type) {
    case 'Recreate':
      return strategy.rollingUpdate ? [forbiddenField(`${f}.rollingUpdate`, "may not be specified when strategy `type` is 'Recreate'")] : [];
    case 'RollingUpdate': {
      const ru = strategy.rollingUpdate;
      if (!ru) return [required(`${f}.rollingUpdate`, 'this should be defaulted and never be nil')];
      const out = [
        ...intOrPercentProblems(`${f}.rollingUpdate.maxUnavailable`, ru.maxUnavailable, true),
        ...intOrPercentProblems(`${f}.rollingUpdate.maxSurge`, ru.maxSurge, false),
      ];
      if (intOrPercent(ru.maxUnavailable ?? 0).value === 0 && intOrPercent(ru.maxSurge ?? 0).value === 0) {
        out.push(invalidValue(`${f}.rollingUpdate.maxUnavailable`, ru.maxUnavailable ?? 0, 'may not be 0 when `maxSurge` is 0'));
      }
      return out;
    }
    default: return [unsupported(f, strategy ?? {}, ['Recreate', 'RollingUpdate'])];
  }
}

/** ValidateDeploymentSpec. */
export function deploymentProblems(d: any): StatusCause[] {
  const spec = d.spec ?? {};
  const out = nonNegativeProblems('spec.replicas', spec.replicas);
  if (!spec.selector) {out.push(required('spec.selector'));} else {
    out.push(...labelSelectorProblems('spec.selector', spec.selector));
    if (emptySelector(spec.selector)) out.push(invalidValue('spec.selector', spec.selector, 'empty selector is invalid for deployment'));
  }
  out.push(...templateMatchProblems(spec), ...podTemplateProblems('spec.template', spec.template));
  const rp = spec.template?.spec?.restartPolicy ?? '';
  if (rp !== 'Always') out.push(unsupported('spec.template.spec.restartPolicy', rp, ['Always']));
  if (spec.template?.spec?.activeDeadlineSeconds !== undefined) {
    out.push(forbiddenField('spec.template.spec.activeDeadlineSeconds', 'activeDeadlineSeconds in ReplicaSet is not Supported'));
  }
  out.push(
    ...deploymentStrategyProblems(spec.strategy),
    ...nonNegativeProblems('spec.minReadySeconds', spec.minReadySeconds),
    ...nonNegativeProblems('spec.revisionHistoryLimit', spec.revisionHistoryLimit),
  );
  if (typeof spec.progressDeadlineSeconds === 'number') {
    out.push(...nonNegativeProblems('spec.progressDeadlineSeconds', spec.progressDeadlineSeconds));
    if (spec.progressDeadlineSeconds <= (spec.minReadySeconds ?? 0)) {
      out.push(invalidValue('spec.progressDeadlineSeconds', spec.progressDeadlineSeconds, 'must be greater than minReadySeconds'));
    }
  }
  return out;
}

/** ValidateJobSpec: counts non-negative, the template a pod template that does not restart Always. */
export function jobProblems(job: any): StatusCause[] {
  const spec = job.spec ?? {};
  const out: StatusCause[] = [];
  for (const f of ['parallelism', 'completions', 'activeDeadlineSeconds', 'backoffLimit', 'ttlSecondsAfterFinished']) {
    out.push(...nonNegativeProblems(`spec.${f}`, spec[f]));
  }
  if (spec.completionMode !== undefined && !['NonIndexed', 'Indexed'].includes(spec.completionMode)) {
    out.push(unsupported('spec.completionMode', spec.completionMode, ['NonIndexed', 'Indexed']));
  }
  if (!spec.selector) out.push(required('spec.selector'));
  else out.push(...labelSelectorProblems('spec.selector', spec.selector));
  out.push(...templateMatchProblems(spec), ...podTemplateProblems('spec.template', spec.template));
  const rp = spec.template?.spec?.restartPolicy ?? '';
  if (rp === 'Always' || rp === '') out.push(required('spec.template.spec.restartPolicy', 'valid values: "OnFailure", "Never"'));
  else if (rp !== 'OnFailure' && rp !== 'Never') out.push(unsupported('spec.template.spec.restartPolicy', rp, ['OnFailure', 'Never']));
  return out;
}
