#!/usr/bin/env node
/**
 * The package's bin: `local-volume-provisioner [run|devices|plan|node-cleanup]`.
 * Started as `local-pv-provisioner` it defaults to `devices`, the device-selecting
 * provisioner's job, so its users change only the image.
 *
 * Exit codes: 0 done, 1 failed while running, 2 unusable flags, environment or
 * configuration (the message says what to set).
 */
import * as path from 'node:path';
import { CommandOptions, parseCommandLine } from './commands';
import { runDeviceProvisioner } from '../controller/run-devices';
import { runDirectoryProvisioner, StartupError } from '../controller/run-directory';
import { runNodeCleanup } from '../node-cleanup/run-node-cleanup';
import { formatPlan, makePlan, PlanConfigError } from '../plan/run-plan';

async function run(options: CommandOptions): Promise<void> {
  switch (options.command) {
    case 'run':
      return runDirectoryProvisioner(options);
    case 'devices':
      return runDeviceProvisioner(options);
    case 'node-cleanup':
      return runNodeCleanup(options);
    case 'plan':
      process.stdout.write(formatPlan(await makePlan(options), options.output));
      return;
  }
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
  try {
    await run(outcome.options);
    return 0;
  } catch (e) {
    if (e instanceof StartupError || e instanceof PlanConfigError) {
      process.stderr.write(`${e.message}\n`);
      return 2;
    }
    process.stderr.write(`${(e as Error).stack ?? String(e)}\n`);
    return 1;
  }
}

if (require.main === module) {
  void main(process.argv.slice(2), process.env, path.basename(process.argv[1] ?? '')).then((code) => process.exit(code));
}
