import { errorsOf, valid, warningsOf } from './helpers';
import { ConfigMapData, parseProvisionerConfig, parseProvisionerConfigToRun, ParseResult, ProvisionerConfig } from '../../src/config';

/**
 * What the agent runs (parseProvisionerConfigToRun): a ConfigMap the Go provisioner
 * loads, the agent loads; problems confined to a class leave that class out. `plan` and
 * the construct use the strict parser, which refuses every one of these.
 */

const GOOD = 'good:\n  hostDir: /mnt/good\n  mountDir: /mnt/good\n';

function skipped(result: ParseResult<ProvisionerConfig>): string[] {
  if (!result.ok) throw new Error(`expected the agent to run, got errors: ${JSON.stringify(result.errors)}`);
  return (result.skippedClasses ?? []).map((c) => c.name);
}

describe('a problem confined to one class leaves that class out and runs the others', () => {
  const CASES: Array<[string, string]> = [
    ['a bad class name', 'Bad_Name:\n  hostDir: /mnt/bad\n  mountDir: /mnt/bad\n'],
    ['a relative hostDir', 'bad:\n  hostDir: mnt/bad\n  mountDir: /mnt/bad\n'],
    ['a missing mountDir', 'bad:\n  hostDir: /mnt/bad\n'],
    ['fsType with volumeMode Block', 'bad:\n  hostDir: /mnt/bad\n  mountDir: /mnt/bad\n  volumeMode: Block\n  fsType: ext4\n'],
    ['accessMode RWO', 'bad:\n  hostDir: /mnt/bad\n  mountDir: /mnt/bad\n  accessMode: RWO\n'],
    ['a selector operator "in"', 'bad:\n  hostDir: /mnt/bad\n  mountDir: /mnt/bad\n  selector:\n  - matchExpressions:\n    - {key: zone, operator: in, values: [a]}\n'],
    ['an empty blockCleanerCommand', 'bad:\n  hostDir: /mnt/bad\n  mountDir: /mnt/bad\n  blockCleanerCommand: []\n'],
    ['the mountDir of another class', 'bad:\n  hostDir: /mnt/good\n  mountDir: /mnt/good\n'],
  ];
  test.each(CASES)('%s', (_, bad) => {
    const data = { storageClassMap: GOOD + bad };
    const run = parseProvisionerConfigToRun(data);
    expect(skipped(run)).toEqual([bad.split(':')[0]]);
    expect(Object.keys(valid(run).storageClassMap)).toEqual(['good']);
    expect(errorsOf(parseProvisionerConfig(data)).length).toBeGreaterThan(0);
  });

  test('the skipped class carries every problem of its own, by path', () => {
    const run = parseProvisionerConfigToRun({ storageClassMap: `${GOOD}bad:\n  hostDir: mnt/bad\n  mountDir: /mnt/bad\n  volumeMode: block\n` });
    if (!run.ok) throw new Error('expected the agent to run');
    expect(run.skippedClasses?.[0].errors.map((e) => e.path)).toEqual(['storageClassMap.bad.hostDir', 'storageClassMap.bad.volumeMode']);
  });
});

describe('what the Go provisioner does not check is a warning, with the default, at run time', () => {
  function runs(data: ConfigMapData): { config: ProvisionerConfig; warnings: string[] } {
    const result = parseProvisionerConfigToRun({ storageClassMap: GOOD, ...data });
    expect(skipped(result)).toEqual([]);
    expect(errorsOf(parseProvisionerConfig({ storageClassMap: GOOD, ...data })).length).toBeGreaterThan(0);
    return { config: valid(result), warnings: warningsOf(result) };
  }

  test('an invalid label in labelsForPV is left off (the API server would refuse every PV with it), the others stay', () => {
    const { config, warnings } = runs({ labelsForPV: 'has space: x\ntier: fast\n' });
    expect(config.labelsForPV).toEqual({ tier: 'fast' });
    expect(warnings).toEqual([expect.stringMatching(/^labelsForPV\.has space: the label key .* \(the agent leaves the label off: the API server would refuse every PV with it\)$/)]);
  });

  test('removeNodeNotReadyTaint without a taint key', () => {
    const { warnings } = runs({ removeNodeNotReadyTaint: 'true' });
    expect(warnings).toEqual(['provisionerNotReadyNodeTaintKey: is required when removeNodeNotReadyTaint is true (the key of the taint to remove)']);
  });

  test('a negative minResyncPeriod', () => {
    const { config, warnings } = runs({ minResyncPeriod: '-5m' });
    expect(config.minResyncPeriod).toBe(300_000);
    expect(warnings).toEqual(['minResyncPeriod: "-5m" is negative (the agent uses the default 5m0s)']);
  });

  test('a key given twice in one map: the last value, as go-yaml reads it', () => {
    const { config, warnings } = runs({ storageClassMap: 'good:\n  hostDir: /mnt/first\n  hostDir: /mnt/good\n  mountDir: /mnt/good\n' });
    expect(config.storageClassMap.good.hostDir).toBe('/mnt/good');
    expect(warnings).toEqual(['storageClassMap.good.hostDir: is given twice in one map; the last value is used, as the Go provisioner reads it']);
  });

  test('a bad value of a key of ours, which the Go provisioner ignores', () => {
    const { config, warnings } = runs({ maxConcurrentCleanups: '0' });
    expect(config.maxConcurrentCleanups).toBe(2);
    expect(warnings).toEqual([expect.stringMatching(/^maxConcurrentCleanups: .* \(the agent uses the default\)$/)]);
  });
});

describe('what the Go provisioner refuses too stops the agent', () => {
  test.each([
    ['YAML it cannot read', { storageClassMap: 'good: [\n' }],
    ['a value of the wrong type for one of its keys', { storageClassMap: GOOD, useJobForCleaning: 'perhaps' }],
    ['a duration it cannot parse', { storageClassMap: GOOD, minResyncPeriod: 'soon' }],
  ])('%s', (_, data) => {
    expect(parseProvisionerConfigToRun(data).ok).toBe(false);
  });
});
