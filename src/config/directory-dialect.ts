import { formatGoDuration } from './duration';
import { IssueCollector } from './issues';
import { ClassConfig, ConfigIssue, ConfigMapData, ParseResult, ProvisionerConfig, SkippedClass } from './model';
import { CLASS_EXTENSION_KEYS, CLASS_KEYS, EXTENSION_KEYS, resolveProvisionerConfigInto, TOP_LEVEL_KEYS } from './resolve-provisioner';
import { parseYamlValue, stringifyYamlValue } from './yaml-values';

const DURATION_KEYS: ReadonlySet<string> = new Set(['minResyncPeriod', 'cleanupTimeout', 'cleanupStallTimeout', 'missingVolumeGracePeriod']);

/**
 * The Go static provisioner's ConfigMap: every key's value is a YAML document.
 * Parsing is YAML -> untyped input -> the one resolver.
 */
export function parseProvisionerConfig(data: ConfigMapData): ParseResult<ProvisionerConfig> {
  const { issues, config } = decodeAndResolve(data);
  return issues.result(() => config!);
}

/**
 * The configuration as the agent runs it: what the Go provisioner loads, the agent
 * loads. Problems confined to one class leave that class out (the others run); an
 * error the Go provisioner does not check, or any problem of a key of ours (which it
 * ignores), becomes a warning and the value's default is used. Only what the Go
 * provisioner refuses too (YAML it cannot read, a value of the wrong type) stops it.
 * `plan` and the construct use the strict {@link parseProvisionerConfig}.
 */
export function parseProvisionerConfigToRun(data: ConfigMapData): ParseResult<ProvisionerConfig> {
  const { issues, config } = decodeAndResolve(data);
  const tolerated = (e: ConfigIssue) => e.storageClass === undefined
    && (e.upstreamAccepts === true || (EXTENSION_KEYS as readonly string[]).includes(e.path.split(/[.[]/)[0]));
  const fatal = issues.errors.filter((e) => e.storageClass === undefined && !tolerated(e));
  if (fatal.length > 0 || !config) return { ok: false, errors: issues.errors.filter((e) => !tolerated(e)), warnings: issues.warnings };
  const skipped = new Map<string, ConfigIssue[]>();
  for (const e of issues.errors) {
    if (e.storageClass !== undefined) skipped.set(e.storageClass, [...skipped.get(e.storageClass) ?? [], e]);
  }
  return {
    ok: true,
    config,
    warnings: [...issues.warnings, ...issues.errors.filter(tolerated).map((e) => (e.upstreamAccepts ? e : { ...e, message: `${e.message} (the agent uses the default)` }))],
    skippedClasses: [...skipped].map(([name, errors]): SkippedClass => ({ name, errors })),
  };
}

function decodeAndResolve(data: ConfigMapData): { issues: IssueCollector; config: ProvisionerConfig | undefined } {
  const issues = new IssueCollector();
  const decoded: Record<string, unknown> = {};
  const unreadable = new Set<string>();
  for (const [key, text] of Object.entries(data)) {
    const parsed = parseYamlValue(key, text, issues);
    if (!parsed) unreadable.add(key);
    // Upstream's metav1.Duration takes only text; a bare YAML number must not pass as milliseconds.
    else if (DURATION_KEYS.has(key) && typeof parsed.value === 'number') decoded[key] = String(parsed.value);
    else decoded[key] = parsed.value;
  }
  const resolver = new IssueCollector();
  const config = resolveProvisionerConfigInto(decoded, resolver);
  // A key whose YAML failed is already reported; "missing" warnings about it are noise.
  issues.absorb({ errors: resolver.errors, warnings: resolver.warnings.filter((w) => !unreadable.has(w.path)) });
  return { issues, config };
}

/** ConfigMap data for a resolved config: every key explicit, durations as Go text, fields in reference order. */
export function serializeProvisionerConfig(c: ProvisionerConfig): ConfigMapData {
  const data: ConfigMapData = {};
  for (const key of TOP_LEVEL_KEYS) {
    const value = c[key];
    if (key === 'storageClassMap') {
      // Our class keys only where set: a class without them reads exactly as upstream writes it.
      const fields = (entry: ClassConfig) => [...CLASS_KEYS, ...CLASS_EXTENSION_KEYS.filter((field) => entry[field] !== undefined)];
      const classes = Object.fromEntries(Object.entries(c.storageClassMap).map(([name, entry]) =>
        [name, Object.fromEntries(fields(entry).map((field) => [field, entry[field]]))]));
      data[key] = stringifyYamlValue(classes);
    } else if (DURATION_KEYS.has(key)) {
      data[key] = stringifyYamlValue(formatGoDuration(value as number));
    } else {
      data[key] = stringifyYamlValue(value);
    }
  }
  return data;
}
