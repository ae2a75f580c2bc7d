import { Document, isPair, isScalar, isSeq, parseDocument, Tags, visit } from 'yaml';
import { IssueCollector, joinPath } from './issues';

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
    // go-yaml v2 (not strict) keeps the last of two equal keys; so do we, and say so.
    uniqueKeys: false,
  });
  for (const warning of doc.warnings) issues.warn(key, describeYamlProblem(warning));
  if (doc.errors.length > 0) {
    for (const error of doc.errors) issues.error(key, `YAML syntax error ${describeYamlProblem(error)}`);
    return undefined;
  }
  reportRepeatedKeys(key, doc, issues);
  try {
    return { value: doc.toJS() };
  } catch (e) {
    // e.g. an alias bomb exceeding maxAliasCount
    issues.error(key, `YAML error: ${(e as Error).message}`);
    return undefined;
  }
}

/** Each key given twice in one map, at its dotted path: the Go provisioner silently uses the last value. */
function reportRepeatedKeys(key: string, doc: Document, issues: IssueCollector): void {
  visit(doc, {
    Map(_, map, ancestors) {
      const chain: unknown[] = [...ancestors, map];
      let at = key;
      chain.forEach((node, i) => {
        if (isPair(node) && isScalar(node.key)) at = joinPath(at, String(node.key.value));
        else if (isSeq(node)) at = joinPath(at, node.items.indexOf(chain[i + 1]));
      });
      const seen = new Set<unknown>();
      for (const pair of map.items) {
        const name = isScalar(pair.key) ? pair.key.value : undefined;
        if (name === undefined) continue;
        if (seen.has(name)) issues.beyondUpstream(joinPath(at, String(name)), 'is given twice in one map; the last value is used, as the Go provisioner reads it');
        seen.add(name);
      }
    },
  });
}

function describeYamlProblem(problem: { message: string; linePos?: [{ line: number; col: number }, ...unknown[]] }): string {
  const firstLine = problem.message.split('\n')[0].replace(/ at line \d+, column \d+:?$/, '');
  const where = problem.linePos ? `at line ${problem.linePos[0].line}, column ${problem.linePos[0].col}: ` : '';
  return `${where}${firstLine}`;
}

/**
 * Characters go-yaml v2 refuses raw (DEL, C1 controls, U+FFFE/U+FFFF), reads as line
 * breaks (NEL, LS, PS) or may take for a byte order mark. The yaml package writes them
 * raw, so they are escaped; they can only occur inside double-quoted scalars, since every
 * string value is written quoted and keys are validated ASCII names.
 */
const UNSAFE_FOR_GO_YAML = /[\u007f-\u009f\u2028\u2029\ufeff\ufffe\uffff]/g;

/**
 * Map keys that go-yaml v2 could read as numbers although the yaml package writes them
 * plain (Go's strconv also takes `0o17` and `1_000`): any key opening like a number.
 * Class names and label keys may do so (`0o17` is a DNS label).
 */
const NUMBER_LIKE_KEY = /^[-+.0-9]/;

/**
 * One value as YAML that go-yaml v2 reads back to the same value: every string
 * double-quoted (so `yes`, `0777`, `1:20` stay text under any YAML version), number-like
 * keys quoted, no line folding, and no raw character go-yaml would reject or reinterpret.
 */
export function stringifyYamlValue(value: unknown): string {
  const doc = new Document(value, { version: '1.1' });
  visit(doc, {
    Pair(_, pair) {
      if (isScalar(pair.key) && typeof pair.key.value === 'string' && NUMBER_LIKE_KEY.test(pair.key.value)) pair.key.type = 'QUOTE_DOUBLE';
    },
  });
  const text = doc.toString({ lineWidth: 0, defaultStringType: 'QUOTE_DOUBLE', defaultKeyType: 'PLAIN' });
  return text.replace(UNSAFE_FOR_GO_YAML, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
