/**
 * The bin as a process: started through a symlink named after a replaced
 * program (as the image links them), its first log line says which dialect it
 * chose and why; `plan` without its directory exits 2 with a message, no stack trace.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { AgentProcess, REPO } from '../../support/agent-process';
import { cleanupPrivileged, makeTempDir } from '../../support/privileged';

// Each case starts a Node process through ts-node: seconds on a busy machine.
afterAll(cleanupPrivileged);

/** node's arguments that start the bin through a symlink called `name`. */
function linkedAs(name: string): string[] {
  const link = path.join(makeTempDir('lvp-bin-name-'), name);
  fs.symlinkSync(path.join(REPO, 'src/runtime/cli/main.ts'), link);
  return ['-r', 'ts-node/register/transpile-only', link];
}

async function runToEnd(args: string[], env: Record<string, string>, entry?: string[]): Promise<{ code: number | null; bin: AgentProcess }> {
  const bin = AgentProcess.start(args, env, { entry, containerEnv: true });
  return { code: await bin.exited(), bin };
}

test('started as local-provisioner with no arguments, it is the Go static provisioner and says so first', async () => {
  const { code, bin } = await runToEnd(['-v=4', '-logtostderr', '-config-dir=/nonexistent/provisioner/config'], { MY_NODE_NAME: 'node-1' }, linkedAs('local-provisioner'));
  const first = JSON.parse(bin.lines[0]);
  expect(first).toEqual(expect.objectContaining({ level: 'info', msg: 'dialect chosen', command: 'run', reason: 'started as "local-provisioner", the Go static provisioner\'s binary' }));
  // -v=4 is debug level: the ignored klog flag is said at debug.
  expect(bin.logged('flag accepted and ignored')).toEqual([expect.objectContaining({ level: 'debug', flag: '-logtostderr' })]);
  // It then reads its configuration, which is not there.
  expect(code).toBe(2);
  expect(bin.log()).toContain('pass --config-dir');
});

test('plan without a configuration directory exits 2 saying what to pass, with no stack trace', async () => {
  const { code, bin } = await runToEnd(['plan', '--node-name=node-1', '--config-dir=/nonexistent/provisioner/config'], {});
  expect(code).toBe(2);
  expect(bin.log()).toBe('--config-dir "/nonexistent/provisioner/config": no such directory; pass --config-dir <directory> holding the provisioner ConfigMap as a directory, '
    + 'one file per key (as mounted at /etc/provisioner/config in the agent\'s container), or --pv-spec-dir <directory> to plan the device dialect');
});
