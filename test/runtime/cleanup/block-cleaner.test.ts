import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { runBlockCleaner, type OutputStream } from '../../../src/runtime/cleanup/block-cleaner';
import { ConcurrencyLimiter } from '../../../src/runtime/cleanup/limiter';
import { CleanupProcessTable } from '../../../src/runtime/cleanup/process-table';
import { retryDelayMs } from '../../../src/runtime/cleanup/retry-backoff';
import { cleanupPrivileged, createLoopDevice, describePrivileged, makeTempDir } from '../../support/privileged';

afterAll(cleanupPrivileged);

const MiB = 1024 * 1024;

/** Live (not zombie) processes whose process group is `pgid`. */
function liveProcessesInGroup(pgid: number): number[] {
  const live: number[] = [];
  for (const pid of fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      // Fields after the parenthesised command: state ppid pgrp ...
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(pgrp) === pgid && state !== 'Z') live.push(Number(pid));
    } catch {
      // exited meanwhile
    }
  }
  return live;
}

// Loop devices and child processes: generous on a busy machine.

async function eventually(check: () => boolean, timeoutMs = 60_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return check();
}

describePrivileged('the block cleaner', () => {
  test('runs the command with LOCAL_PV_BLKDEVICE and passes its output on line by line', async () => {
    const loop = createLoopDevice(16 * MiB);
    const lines: Array<[string, OutputStream]> = [];
    const result = await runBlockCleaner({
      command: ['bash', '-c', 'echo "cleaning $LOCAL_PV_BLKDEVICE"; echo half >&2; printf "a\\nb\\n"'],
      device: loop.device,
      timeoutMs: 10_000,
      onOutput: (line, stream) => lines.push([line, stream]),
    });
    expect(result).toMatchObject({ ok: true, exitCode: 0, timedOut: false, started: true });
    expect(lines).toEqual(expect.arrayContaining([[`cleaning ${loop.device}`, 'stdout'], ['half', 'stderr'], ['a', 'stdout'], ['b', 'stdout']]));
    expect(lines).toHaveLength(4);
  });

  test('runs at idle I/O priority', async () => {
    const loop = createLoopDevice(16 * MiB);
    const lines: string[] = [];
    await runBlockCleaner({ command: ['bash', '-c', 'ionice -p $$'], device: loop.device, timeoutMs: 10_000, onOutput: (l) => lines.push(l) });
    expect(lines).toEqual(['idle']);
  });

  test('a command that exits 10 fails with its exit code and is retried after the backoff', async () => {
    const loop = createLoopDevice(16 * MiB);
    const marker = path.join(makeTempDir(), 'attempted');
    // Fails the first time, succeeds the second.
    const command = ['bash', '-c', `if [ -e ${marker} ]; then exit 0; fi; touch ${marker}; exit 10`];
    let now = 0;
    const table = new CleanupProcessTable({ limiter: new ConcurrencyLimiter(1), timeoutMs: 0, now: () => now });
    const task = async (signal: AbortSignal) => {
      const r = await runBlockCleaner({ command, device: loop.device, timeoutMs: 0, signal });
      return r.ok ? { ok: true as const } : { ok: false as const, reason: r.reason! };
    };

    table.start('uid-1', 'local-pv-1', task);
    await table.idle();
    expect(table.consume('uid-1')).toMatchObject({ state: 'failed', failures: 1, reason: expect.stringContaining('exited with code 10') });
    expect(table.start('uid-1', 'local-pv-1', task).started).toBe(false);
    now += retryDelayMs(1);
    expect(table.start('uid-1', 'local-pv-1', task).started).toBe(true);
    await table.idle();
    expect(table.consume('uid-1')).toMatchObject({ state: 'succeeded' });
  });

  test('the exit code is in the result', async () => {
    const loop = createLoopDevice(16 * MiB);
    const r = await runBlockCleaner({ command: ['bash', '-c', 'exit 10'], device: loop.device, timeoutMs: 0 });
    expect(r).toMatchObject({ ok: false, exitCode: 10, signal: null, timedOut: false, reason: expect.stringContaining('exited with code 10') });
  });

  test('a command that hangs is killed at the timeout with its whole process group', async () => {
    const loop = createLoopDevice(16 * MiB);
    const r = await runBlockCleaner({
      // A background child and a foreground one, as a script running shred would have.
      command: ['bash', '-c', 'sleep 1000 & sleep 1000; echo never'],
      device: loop.device,
      timeoutMs: 300,
    });
    expect(r).toMatchObject({ ok: false, timedOut: true, exitCode: null, signal: 'SIGKILL', reason: expect.stringContaining('timed out after 300 ms') });
    expect(await eventually(() => liveProcessesInGroup(r.pid!).length === 0)).toBe(true);
  });

  test('what a successful command leaves running in the background is killed too', async () => {
    const loop = createLoopDevice(16 * MiB);
    const r = await runBlockCleaner({ command: ['bash', '-c', '(sleep 1000 >/dev/null 2>&1 &) ; exit 0'], device: loop.device, timeoutMs: 0 });
    expect(r.ok).toBe(true);
    expect(await eventually(() => liveProcessesInGroup(r.pid!).length === 0)).toBe(true);
  });

  test('aborting stops the command', async () => {
    const loop = createLoopDevice(16 * MiB);
    const controller = new AbortController();
    setTimeout(() => controller.abort('shutdown'), 100);
    const r = await runBlockCleaner({ command: ['sleep', '1000'], device: loop.device, timeoutMs: 0, signal: controller.signal });
    expect(r).toMatchObject({ ok: false, timedOut: false, reason: expect.stringContaining('was stopped') });
  });

  test('a cleaner never outlives this process: killed with SIGKILL, its whole tree goes with it', async () => {
    const loop = createLoopDevice(16 * MiB);
    const marker = path.join(makeTempDir(), 'still-running');
    const script = `require(${JSON.stringify(path.resolve(__dirname, '../../../src/runtime/cleanup/block-cleaner'))}).runBlockCleaner({
      command: ['bash', '-c', 'sleep 1000 & while :; do touch ${marker}; sleep 0.05; done'], device: ${JSON.stringify(loop.device)}, timeoutMs: 0 })`;
    const agent = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', '-e', script], {
      env: { ...process.env, TS_NODE_PROJECT: path.resolve(__dirname, '../../tsconfig.json') }, stdio: 'ignore',
    });
    await eventually(() => fs.existsSync(marker), 60_000);
    agent.kill('SIGKILL');
    await new Promise((r) => agent.once('exit', r));
    fs.rmSync(marker);
    // Nothing touches the marker again: the cleaner's loop, and its background sleep, died with the agent.
    await new Promise((r) => setTimeout(r, 500));
    expect(fs.existsSync(marker)).toBe(false);
    expect(spawnSync('pgrep', ['-f', `touch ${marker}`]).status).toBe(1);
  });

  test('a command that cannot start is a failure with a reason', async () => {
    const loop = createLoopDevice(16 * MiB);
    const r = await runBlockCleaner({ command: ['/nonexistent/cleaner'], device: loop.device, timeoutMs: 0, lowIoPriority: false });
    expect(r).toMatchObject({ ok: false, started: false, reason: expect.stringContaining('could not start') });
  });

  test('an empty command is refused', async () => {
    expect(await runBlockCleaner({ command: [], device: '/dev/null', timeoutMs: 0 })).toMatchObject({ ok: false, started: false });
  });
});
