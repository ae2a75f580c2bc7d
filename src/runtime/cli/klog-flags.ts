/**
 * The 15 flags `klog.InitFlags` registers (klog v2.140), which the Go static
 * provisioner and the device provisioner accept. Their users pass them
 * (`-v=5`, `--stderrthreshold=INFO`, `-logtostderr=false`), so they are accepted
 * with the same types: the verbosity and the stderr threshold become the log
 * level where a dialect's own logs follow klog; the others only shape klog's
 * output (headers, files, which stream) and are ignored with a debug line.
 */
import type { FlagSpec } from './flags';
import type { LogLevel } from '../observability';

const SHAPES_OUTPUT = 'klog output details; logs here are JSON (or --log-format=text) lines on standard output';
const NO_FILES = 'the Go provisioner forces logging to stderr, so it never wrote log files either; logs go to standard output';

/** klog's flags; `v` has the shorthand `-v` in pflag dialects (pflag gives one-letter Go flags one). */
export const KLOG_FLAGS: readonly FlagSpec[] = [
  { name: 'v', type: 'int', shorthand: 'v', help: 'klog verbosity: 0-3 info, 4 debug, 5 and more trace (unless --log-level is given).' },
  { name: 'stderrthreshold', type: 'severity', help: 'klog severity (INFO, WARNING, ERROR, FATAL or 0-3): above INFO it raises the log level to it (unless --log-level is given).' },
  { name: 'vmodule', type: 'string', ignored: 'per-file verbosity has no counterpart here; use --log-level' },
  { name: 'logtostderr', type: 'boolean', ignored: SHAPES_OUTPUT },
  { name: 'alsologtostderr', type: 'boolean', ignored: SHAPES_OUTPUT },
  { name: 'alsologtostderrthreshold', type: 'severity', ignored: SHAPES_OUTPUT },
  { name: 'legacy_stderr_threshold_behavior', type: 'boolean', ignored: SHAPES_OUTPUT },
  { name: 'log_dir', type: 'string', ignored: NO_FILES },
  { name: 'log_file', type: 'string', ignored: NO_FILES },
  { name: 'log_file_max_size', type: 'uint', ignored: NO_FILES },
  { name: 'log_backtrace_at', type: 'string', ignored: 'errors carry their stack under "err" already' },
  { name: 'add_dir_header', type: 'boolean', ignored: SHAPES_OUTPUT },
  { name: 'skip_headers', type: 'boolean', ignored: SHAPES_OUTPUT },
  { name: 'skip_log_headers', type: 'boolean', ignored: SHAPES_OUTPUT },
  { name: 'one_output', type: 'boolean', ignored: SHAPES_OUTPUT },
];

/** The same flags where klog only carries client-go's messages (the device provisioner logs through zap). */
export const KLOG_FLAGS_CLIENT_ONLY: readonly FlagSpec[] = KLOG_FLAGS.map((spec) => ({
  ...spec,
  ignored: spec.ignored ?? 'klog only carried client-go\'s messages in the device provisioner; its own logs follow --zap-log-level',
}));

/**
 * The log level klog's flags ask for, or undefined when neither was given.
 * A line reaches klog's stderr when its severity is at least the threshold and,
 * for verbose info lines, its V-level at most `v`; so a threshold above INFO is
 * the level, and otherwise `v` decides by the Kubernetes logging conventions
 * (0-3 steady-state information, 4 debug, 5 and more trace).
 */
export function klogLogLevel(v: number | undefined, stderrThreshold: number | undefined): LogLevel | undefined {
  if (v === undefined && stderrThreshold === undefined) return undefined;
  if (stderrThreshold !== undefined && stderrThreshold >= 1) {
    return stderrThreshold === 1 ? 'warn' : stderrThreshold === 2 ? 'error' : 'fatal';
  }
  const verbosity = v ?? 0;
  return verbosity >= 5 ? 'trace' : verbosity === 4 ? 'debug' : 'info';
}
