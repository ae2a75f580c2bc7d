#!/usr/bin/env node
/**
 * The package's bin: `local-volume-provisioner [run|devices|plan|node-cleanup]`.
 * Without a subcommand it speaks the dialect of the program it replaces, chosen
 * from the name it was started under (the image links `/local-provisioner`,
 * `/local-pv-provisioner` and `/main` to it) or from flags and environment that
 * belong to one dialect only (see dialect.ts); the first log line says which
 * and why.
 *
 * Exit codes: 0 done, 1 failed while running, 2 unusable flags, environment or
 * configuration (the message says what to set).
 */
import * as path from 'node:path';
import { CommandOptions, parseCommandLine } from './commands';
import type { Notice } from './flags';
import { createLogger, isLogLevel } from '../observability/logger';
import { StartupError } from '../startup-error';

/**
 * Each command's modules are loaded when it runs, not before: `--help`, `plan` and
 * node-cleanup do not load (or keep in memory) the agents' code, nor the agents each
 * other's. require, not import(): under node16 module resolution tsc would keep an
 * import() as a real ECMAScript import of our CommonJS output.
 */
/* eslint-disable @typescript-eslint/no-require-imports */
async function run(options: CommandOptions): Promise<void> {
  switch (options.command) {
    case 'run':
      return (require('../agent/run-directory') as typeof import('../agent/run-directory')).runDirectoryProvisioner(options);
    case 'devices':
      return (require('../agent/run-devices') as typeof import('../agent/run-devices')).runDeviceProvisioner(options);
    case 'node-cleanup':
      return (require('../node-cleanup/run-node-cleanup') as typeof import('../node-cleanup/run-node-cleanup')).runNodeCleanup(options);
    case 'volumes': {
      const { runVolumesCommand } = require('../record/volumes-command') as typeof import('../record/volumes-command');
      process.stdout.write(await runVolumesCommand(options));
      return;
    }
    case 'plan': {
      const { formatPlan, makePlan } = require('../plan/run-plan') as typeof import('../plan/run-plan');
      process.stdout.write(formatPlan(await makePlan(options), options.output));
      return;
    }
  }
}
/* eslint-enable @typescript-eslint/no-require-imports */

/** The dialect chosen and what the command line asked that is not done as written, before the command logs anything. */
function logStart(options: CommandOptions, reason: string, notices: readonly Notice[]): void {
  // plan prints its result on stdout: no log lines there.
  if (options.command === 'plan' || options.command === 'volumes') return;
  const logger = createLogger({ level: isLogLevel(options.logLevel) ? options.logLevel : 'info', format: options.logFormat });
  logger.info({ command: options.command, reason }, 'dialect chosen');
  for (const n of notices) logger[n.level](n.fields, n.msg);
}

export async function main(argv: readonly string[], env: NodeJS.ProcessEnv, invokedAs: string): Promise<number> {
  const outcome = parseCommandLine(argv, env, invokedAs);
  if (outcome.kind === 'help') {
    process.stdout.write(outcome.text);
    return 0;
  }
  if (outcome.kind === 'error') {
    process.stderr.write(`${outcome.message}\n`);
    return 2;
  }
  logStart(outcome.options, outcome.reason, outcome.notices);
  try {
    await run(outcome.options);
    return 0;
  } catch (e) {
    if (e instanceof StartupError) {
      process.stderr.write(`${e.message}\n`);
      return 2;
    }
    process.stderr.write(`${(e as Error).stack ?? String(e)}\n`);
    return 1;
  }
}

if (require.main === module) {
  // process.argv[1] keeps the name of a symlink the bin was started through.
  void main(process.argv.slice(2), process.env, path.basename(process.argv[1] ?? '')).then((code) => process.exit(code));
}
