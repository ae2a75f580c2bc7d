import { formatGoDuration } from './duration';
import { IssueCollector } from './issues';
import { ConfigMapData, ParseResult, ProvisionerConfig } from './model';
import { CLASS_KEYS, resolveProvisionerConfigInto, TOP_LEVEL_KEYS } from './resolve-provisioner';
import { parseYamlValue, stringifyYamlValue } from './yaml-values';

const DURATION_KEYS: ReadonlySet<string> = new Set(['minResyncPeriod', 'cleanupTimeout', 'cleanupStallTimeout', 'missingVolumeGracePeriod']);

/**
 * The Go static provisioner's ConfigMap: every key's value is a YAML document.
 * Parsing is YAML -> untyped input -> the one resolver.
 */
export function parseProvisionerConfig(data: ConfigMapData): ParseResult<ProvisionerConfig> {
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
  return issues.result(() => config!);
}

/** ConfigMap data for a resolved config: every key explicit, durations as Go text, fields in reference order. */
export function serializeProvisionerConfig(c: ProvisionerConfig): ConfigMapData {
  const data: ConfigMapData = {};
  for (const key of TOP_LEVEL_KEYS) {
    const value = c[key];
    if (key === 'storageClassMap') {
      const classes = Object.fromEntries(Object.entries(c.storageClassMap).map(([name, entry]) =>
        [name, Object.fromEntries(CLASS_KEYS.map((field) => [field, entry[field]]))]));
      data[key] = stringifyYamlValue(classes);
    } else if (DURATION_KEYS.has(key)) {
      data[key] = stringifyYamlValue(formatGoDuration(value as number));
    } else {
      data[key] = stringifyYamlValue(value);
    }
  }
  return data;
}
