/**
 * Where a pod may run, as the core validation checks it: label selectors,
 * node selector terms (also a PV's node affinity), node and pod affinity,
 * tolerations. Wording and field paths follow ValidateLabelSelector,
 * ValidateNodeSelector, validateAffinity and ValidateTolerations.
 */
import { forbiddenField, invalidValue, required, unsupported } from './causes';
import { dnsLabelProblems, labelValueMessages, labelValueProblems, labelsProblems, qualifiedNameProblems } from './names';
import { StatusCause } from './status';

const IN_NOT_IN = 'must be specified when `operator` is \'In\' or \'NotIn\'';
const EXISTS = 'may not be specified when `operator` is \'Exists\' or \'DoesNotExist\'';

const valuesProblems = (field: string, values: unknown[]) => values.flatMap((v, i) => labelValueProblems(`${field}[${i}]`, String(v)));

/** The operator rules of label and node selector requirements; `numeric` admits Gt and Lt (node selectors only). */
function operatorProblems(field: string, req: any, numeric: boolean): StatusCause[] {
  const values: unknown[] = req?.values ?? [];
  const op = req?.operator;
  if (op === 'In' || op === 'NotIn') return values.length ? [] : [required(`${field}.values`, IN_NOT_IN)];
  if (op === 'Exists' || op === 'DoesNotExist') return values.length ? [forbiddenField(`${field}.values`, EXISTS)] : [];
  if (numeric && (op === 'Gt' || op === 'Lt')) {
    return values.length === 1 ? [] : [required(`${field}.values`, 'must be specified single value when `operator` is \'Lt\' or \'Gt\'')];
  }
  return [invalidValue(`${field}.operator`, op ?? '', 'not a valid selector operator')];
}

/** metav1 LabelSelector (workload selectors, pod affinity terms). */
export function labelSelectorProblems(field: string, selector: any): StatusCause[] {
  if (!selector) return [];
  const out = labelsProblems(`${field}.matchLabels`, selector.matchLabels);
  (selector.matchExpressions ?? []).forEach((req: any, i: number) => {
    const f = `${field}.matchExpressions[${i}]`;
    out.push(...operatorProblems(f, req, false), ...qualifiedNameProblems(`${f}.key`, req?.key ?? ''), ...valuesProblems(`${f}.values`, req?.values ?? []));
  });
  return out;
}

/** One NodeSelectorTerm; preferred terms may carry values that are not label values. */
function nodeSelectorTermProblems(field: string, term: any, checkValues: boolean): StatusCause[] {
  const out: StatusCause[] = [];
  (term?.matchExpressions ?? []).forEach((req: any, j: number) => {
    const f = `${field}.matchExpressions[${j}]`;
    out.push(...operatorProblems(f, req, true), ...qualifiedNameProblems(`${f}.key`, req?.key ?? ''));
    if (checkValues) out.push(...valuesProblems(`${f}.values`, req?.values ?? []));
  });
  (term?.matchFields ?? []).forEach((req: any, j: number) => {
    const f = `${field}.matchFields[${j}]`;
    if (req?.operator !== 'In' && req?.operator !== 'NotIn') out.push(invalidValue(`${f}.operator`, req?.operator ?? '', 'not a valid selector operator'));
    else if ((req.values ?? []).length !== 1) out.push(required(`${f}.values`, 'must be only one value when `operator` is \'In\' or \'NotIn\' for node field selector'));
    if (req?.key !== 'metadata.name') out.push(invalidValue(`${f}.key`, req?.key ?? '', 'not a valid field selector key'));
  });
  return out;
}

/** ValidateNodeSelector: at least one term, each term's requirements well formed. */
export function nodeSelectorProblems(field: string, selector: any): StatusCause[] {
  const terms = selector?.nodeSelectorTerms;
  if (!Array.isArray(terms) || terms.length === 0) return [required(`${field}.nodeSelectorTerms`, 'must have at least one node selector term')];
  return terms.flatMap((term: any, i: number) => nodeSelectorTermProblems(`${field}.nodeSelectorTerms[${i}]`, term, true));
}

const weightProblems = (field: string, weight: unknown) =>
  (typeof weight === 'number' && weight >= 1 && weight <= 100 ? [] : [invalidValue(field, weight ?? 0, 'must be in the range 1-100')]);

function podAffinityTermProblems(field: string, term: any): StatusCause[] {
  const out = [...labelSelectorProblems(`${field}.labelSelector`, term?.labelSelector), ...labelSelectorProblems(`${field}.namespaceSelector`, term?.namespaceSelector)];
  for (const ns of term?.namespaces ?? []) out.push(...dnsLabelProblems(`${field}.namespace`, String(ns)));
  if (!term?.topologyKey) out.push(required(`${field}.topologyKey`, 'can not be empty'));
  out.push(...qualifiedNameProblems(`${field}.topologyKey`, term?.topologyKey ?? ''));
  return out;
}

function podAffinityProblems(field: string, affinity: any): StatusCause[] {
  const hard = (affinity?.requiredDuringSchedulingIgnoredDuringExecution ?? [])
    .flatMap((t: any, i: number) => podAffinityTermProblems(`${field}.requiredDuringSchedulingIgnoredDuringExecution[${i}]`, t));
  const soft = (affinity?.preferredDuringSchedulingIgnoredDuringExecution ?? []).flatMap((t: any, i: number) => {
    const f = `${field}.preferredDuringSchedulingIgnoredDuringExecution[${i}]`;
    return [...weightProblems(`${f}.weight`, t?.weight), ...podAffinityTermProblems(`${f}.podAffinityTerm`, t?.podAffinityTerm)];
  });
  return [...hard, ...soft];
}

/** validateAffinity: node affinity terms, pod (anti-)affinity terms and weights. */
export function affinityProblems(field: string, affinity: any): StatusCause[] {
  if (!affinity) return [];
  const out: StatusCause[] = [];
  const node = affinity.nodeAffinity;
  if (node?.requiredDuringSchedulingIgnoredDuringExecution) {
    out.push(...nodeSelectorProblems(`${field}.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution`, node.requiredDuringSchedulingIgnoredDuringExecution));
  }
  (node?.preferredDuringSchedulingIgnoredDuringExecution ?? []).forEach((t: any, i: number) => {
    const f = `${field}.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[${i}]`;
    out.push(...weightProblems(`${f}.weight`, t?.weight), ...nodeSelectorTermProblems(`${f}.preference`, t?.preference, false));
  });
  if (affinity.podAffinity) out.push(...podAffinityProblems(`${field}.podAffinity`, affinity.podAffinity));
  if (affinity.podAntiAffinity) out.push(...podAffinityProblems(`${field}.podAntiAffinity`, affinity.podAntiAffinity));
  return out;
}

const TAINT_EFFECTS = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'];

/** ValidateTolerations: key syntax, operator and value rules, effects. */
export function tolerationsProblems(field: string, tolerations: any[] | undefined): StatusCause[] {
  const out: StatusCause[] = [];
  (tolerations ?? []).forEach((t: any, i: number) => {
    const f = `${field}[${i}]`;
    const operator = t?.operator ?? '';
    if (t?.key) out.push(...qualifiedNameProblems(`${f}.key`, t.key));
    if (!t?.key && operator !== 'Exists') {
      out.push(invalidValue(`${f}.operator`, operator, 'operator must be Exists when `key` is empty, which means "match all values and all keys"'));
    }
    if (t?.tolerationSeconds !== undefined && t?.tolerationSeconds !== null && t?.effect !== 'NoExecute') {
      out.push(invalidValue(`${f}.effect`, t?.effect ?? '', 'effect must be \'NoExecute\' when `tolerationSeconds` is set'));
    }
    const value = t?.value ?? '';
    if (operator === '' || operator === 'Equal') {
      const msgs = labelValueMessages(value);
      if (msgs.length) out.push(invalidValue(`${f}.operator`, value, msgs.join(';')));
    } else if (operator === 'Exists') {
      if (value) out.push(invalidValue(`${f}.operator`, value, 'value must be empty when `operator` is \'Exists\''));
    } else {
      out.push(unsupported(`${f}.operator`, operator, ['Equal', 'Exists']));
    }
    if (t?.effect && !TAINT_EFFECTS.includes(t.effect)) out.push(unsupported(`${f}.effect`, t.effect, TAINT_EFFECTS));
  });
  return out;
}
