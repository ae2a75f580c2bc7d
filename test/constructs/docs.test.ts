import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** docs/construct.md stays the props reference and the Helm migration table. */
const ROOT = join(__dirname, '..', '..');
const docs = readFileSync(join(ROOT, 'docs', 'construct.md'), 'utf8');
const codeSpans = [...docs.replace(/```[\s\S]*?```/g, '').matchAll(/`([^`]+)`/g)].map((m) => m[1]);
const mentioned = (word: string) => codeSpans.some((span) => new RegExp(`(^|[^A-Za-z])${word}([^A-Za-z]|$)`).test(span));

test('every prop of props.ts is documented', () => {
  const props = [...readFileSync(join(ROOT, 'src', 'constructs', 'props.ts'), 'utf8').matchAll(/readonly (\w+)\??:/g)].map((m) => m[1]);
  expect(props.length).toBeGreaterThan(80);
  expect([...new Set(props)].filter((p) => !mentioned(p))).toEqual([]);
});

/** The first-column cells of the table under `heading`, up to the next heading. */
function tableRows(heading: string): string[] {
  const start = docs.indexOf(heading);
  const section = docs.slice(start + heading.length).split(/\n#{2,3} /)[0];
  return section.split('\n').filter((l) => l.startsWith('| ')).map((l) => l.split('|')[1].trim());
}

test('every Helm chart value of the Go provisioner has a row in the chart value -> prop table', () => {
  // The values in ../shared/reference/static-provisioner.md ("Helm chart values") and
  // upstream-deployments.md (1.6, chart v2.9.0).
  const helmValues = [
    'classes[].name', 'classes[].hostDir', 'classes[].mountDir', 'classes[].volumeMode', 'classes[].accessMode',
    'classes[].fsType', 'classes[].namePattern', 'classes[].selector', 'classes[].allowedTopologies',
    'classes[].blockCleanerCommand', 'classes[].storageClass: true', 'classes[].storageClass.reclaimPolicy',
    'classes[].storageClass.isDefaultClass', 'classes[].storageClass.provisioner', 'rbac.create',
    'serviceAccount.create', 'serviceAccount.name', 'setPVOwnerRef', 'useJobForCleaning', 'useNodeNameOnly',
    'minResyncPeriod', 'labelsForPV', 'nodeLabels', 'additionalVolumes', 'additionalVolumeMounts', 'mountDevVolume',
    'podAnnotations', 'podLabels', 'image', 'imagePullPolicy', 'imagePullSecrets', 'priorityClassName', 'nodeSelector',
    'tolerations', 'affinity', 'removeNodeNotReadyTaint', 'provisionerNotReadyNodeTaintKey', 'resources', 'privileged',
    'hostPID', 'initContainers', 'liveness probe', 'readiness probe', 'startup probe', 'updateStrategy',
    'serviceMonitor.enabled', 'serviceMonitor.interval', 'serviceMonitor.namespace', 'serviceMonitor.additionalLabels',
    'serviceMonitor.relabelings', 'rbac.extraRules', 'securityContext', 'kubeConfigEnv',
    'serviceAccount.create: false', 'enableWindows', 'nameOverride',
  ];
  const rows = tableRows('## Helm chart value → prop');
  expect(helmValues.filter((v) => !rows.some((r) => r === `\`${v}\`` || r.startsWith(`\`${v}\` `) || r === v || r.startsWith(`${v} `) || r.startsWith(`\`${v}\`, `)))).toEqual([]);
});

test('the chart value table lists only chart values: node cleanup is not in chart v2.9.0', () => {
  expect(tableRows('## Helm chart value → prop').filter((r) => r.includes('nodeCleanupController'))).toEqual([]);
});
