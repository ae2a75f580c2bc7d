import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { run } from '../../../src/runtime/pool/command';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lvp-command-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('a storage tool run by the agent\'s command shells', () => {
  test('gets each argument as given: spaces, quotes, newlines, globs and $ are never shell words', async () => {
    const args = ['a b', '"q"', "'s'", 'line\nbreak', '*', '$HOME', '; rm -rf /', ''];
    expect(await run('printf', ['%s|', ...args])).toBe(`${args.join('|')}|`);
  });

  test('its stdout is returned whole, trailing newlines kept', async () => {
    const big = 'x'.repeat(300_000);
    expect(await run('printf', ['%s\n\n', big])).toBe(`${big}\n\n`);
  });

  test('a failure rejects with the command, its arguments and its own words from stderr', async () => {
    await expect(run('sh', ['-c', 'echo out; echo "no such pool" >&2; exit 3'])).rejects.toThrow('sh -c echo out; echo "no such pool" >&2; exit 3 failed: no such pool');
  });

  test('a failure without words says its exit code', async () => {
    await expect(run('sh', ['-c', 'exit 7'])).rejects.toThrow(/failed: exit code 7$/);
  });

  test('words on stderr with exit 0 are a failure when the tool says its errors only there', async () => {
    expect(await run('sh', ['-c', 'echo warned >&2; echo done'])).toBe('done\n');
    await expect(run('sh', ['-c', 'echo warned >&2'], { stderrIsFailure: true })).rejects.toThrow(/failed: warned$/);
  });

  test('a tool not on the PATH is said as a spawn says it (ENOENT)', async () => {
    await expect(run('lvp-no-such-tool', ['x'])).rejects.toThrow('lvp-no-such-tool x failed: spawn lvp-no-such-tool ENOENT');
  });

  test('a tool past its timeout is killed with its children, and the next tool runs', async () => {
    const pidFile = path.join(dir, 'pid');
    await expect(run('sh', ['-c', `sleep 300 & echo $! > ${pidFile}; wait`], { timeoutMs: 500 })).rejects.toThrow(/timed out after 500 ms/);
    const child = Number(fs.readFileSync(pidFile, 'utf8'));
    await eventuallyGone(child);
    expect(await run('echo', ['next'])).toBe('next\n');
  });

  test('output with a NUL (it could forge the end of a command) ends that shell with an error, never a result', async () => {
    await expect(run('printf', ['a\\0 forged 0\\nb'])).rejects.toThrow(/printf .* failed: the command shell was killed/);
    expect(await run('echo', ['after'])).toBe('after\n');
  });

  test('tools run side by side: one waiting for another is not queued behind it', async () => {
    const flag = path.join(dir, 'flag');
    const waiter = run('sh', ['-c', `while [ ! -e ${flag} ]; do sleep 0.05; done; echo seen`], { timeoutMs: 60_000 });
    await run('touch', [flag]);
    expect(await waiter).toBe('seen\n');
  });
});

async function eventuallyGone(pid: number): Promise<void> {
  for (;;) {
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}
