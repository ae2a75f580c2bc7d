import { parseDocument, stringify, Tags } from 'yaml';
import { IssueCollector } from './issues';

/**
 * Each directory-dialect ConfigMap value is one YAML document, which upstream
 * reads with sigs.k8s.io/yaml (go-yaml v2, YAML 1.1). We read YAML 1.1 too, so
 * `yes`/`on` are booleans and `0777` is octal, but without the 1.1 types go-yaml
 * v2 does not resolve for these fields (timestamps, sexagesimal `1:20`), which
 * stay text as they do upstream.
 */

const GO_YAML_V2_UNSUPPORTED = (tag: Tags[number]) => typeof tag === 'string'
  ? ['timestamp', 'intTime', 'floatTime'].includes(tag)
  : tag.tag === 'tag:yaml.org,2002:timestamp' || tag.format === 'TIME';

/** The value of one ConfigMap key, or undefined after recording its syntax errors against the key. */
export function parseYamlValue(key: string, text: string, issues: IssueCollector): { value: unknown } | undefined {
  const doc = parseDocument(text, {
    version: '1.1',
    customTags: (tags) => tags.filter((tag) => !GO_YAML_V2_UNSUPPORTED(tag)),
  });
  for (const warning of doc.warnings) issues.warn(key, describeYamlProblem(warning));
  if (doc.errors.length > 0) {
    for (const error of doc.errors) issues.error(key, `YAML syntax error ${describeYamlProblem(error)}`);
    return undefined;
  }
  try {
    return { value: doc.toJS() };
  } catch (e) {
    // e.g. an alias bomb exceeding maxAliasCount
    issues.error(key, `YAML error: ${(e as Error).message}`);
    return undefined;
  }
}

function describeYamlProblem(problem: { message: string; linePos?: [{ line: number; col: number }, ...unknown[]] }): string {
  const firstLine = problem.message.split('\n')[0].replace(/ at line \d+, column \d+:?$/, '');
  const where = problem.linePos ? `at line ${problem.linePos[0].line}, column ${problem.linePos[0].col}: ` : '';
  return `${where}${firstLine}`;
}

/**
 * One value as YAML that go-yaml v2 reads back to the same value: every string
 * double-quoted (so `yes`, `0777`, `1:20` stay text under any YAML version) and
 * no line folding.
 */
export function stringifyYamlValue(value: unknown): string {
  return stringify(value, {
    version: '1.1',
    lineWidth: 0,
    defaultStringType: 'QUOTE_DOUBLE',
    defaultKeyType: 'PLAIN',
  });
}
