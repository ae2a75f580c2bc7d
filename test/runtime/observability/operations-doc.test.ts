import * as fs from 'node:fs';
import * as path from 'node:path';
import { familyTypes } from './exposition';
import { EVENT_REASONS } from '../../../src/runtime/observability/events';
import { ProvisionerMetrics } from '../../../src/runtime/observability/metrics';

/** docs/operations.md is what operators read; it must not drift from the code. */
const doc = fs.readFileSync(path.join(__dirname, '../../../docs/operations.md'), 'utf8');

describe('docs/operations.md', () => {
  test('documents every metric the runtime exports', async () => {
    const families = [...familyTypes(await new ProvisionerMetrics({ version: 'x', processMetrics: false }).exposition()).keys()];
    const undocumented = families.filter((name) => !doc.includes(`\`${name}\``));
    expect(undocumented).toEqual([]);
  });

  test('lists every Event reason with its type, object, meaning and example as in the catalogue', () => {
    const missing = EVENT_REASONS
      .map((e) => `| \`${e.reason}\` | ${e.type} | ${[e.regarding].flat().join(', ')} | ${e.meaning} | \`${e.example}\` |`)
      .filter((row) => !doc.includes(row));
    expect(missing).toEqual([]);
  });
});
