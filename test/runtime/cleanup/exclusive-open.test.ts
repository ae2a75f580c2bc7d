import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { checkDeviceNotInUse, openDeviceExclusively } from '../../../src/runtime/cleanup/exclusive-open';
import { cleanupPrivileged, createLoopDevice, describePrivileged, makeTempDir, mkfsExt4, mount } from '../../support/privileged';

const holders: ChildProcess[] = [];
afterAll(() => {
  for (const h of holders) h.kill('SIGKILL');
  cleanupPrivileged();
});

/** Starts another process that opens `device` (exclusively or not) and keeps it open; resolves once it has. */
async function holdOpen(device: string, exclusive: boolean): Promise<ChildProcess> {
  const flags = exclusive ? 'fs.constants.O_RDWR | fs.constants.O_EXCL' : 'fs.constants.O_RDWR';
  const child = spawn(process.execPath, ['-e', `const fs = require('fs'); fs.openSync(${JSON.stringify(device)}, ${flags}); console.log('holding'); setInterval(() => {}, 1000);`], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  holders.push(child);
  await new Promise<void>((resolve, reject) => {
    child.stdout!.once('data', () => resolve());
    child.once('exit', (code) => reject(new Error(`holder exited with ${code}`)));
  });
  return child;
}

describePrivileged('opening a device exclusively', () => {
  const MiB = 1024 * 1024;

  test('a free device opens, and stays claimed until closed', () => {
    const loop = createLoopDevice(16 * MiB);
    const opened = openDeviceExclusively(loop.device, { write: true });
    expect(opened.ok).toBe(true);
    if (!opened.ok) return;
    expect(checkDeviceNotInUse(loop.device)).toMatchObject({ ok: false, reason: expect.stringContaining('in use') });
    fs.closeSync(opened.fd);
    expect(checkDeviceNotInUse(loop.device)).toEqual({ ok: true });
  });

  test('a mounted device is refused', () => {
    const loop = createLoopDevice(32 * MiB);
    mkfsExt4(loop.device);
    mount(loop.device, path.join(makeTempDir(), 'mnt'));
    expect(openDeviceExclusively(loop.device, { write: true })).toEqual({
      ok: false, reason: `device "${loop.device}" is in use (mounted, or claimed by another program or device stack); refusing to touch it`,
    });
  });

  test('a device another process holds exclusively is refused', async () => {
    const loop = createLoopDevice(16 * MiB);
    const holder = await holdOpen(loop.device, true);
    expect(checkDeviceNotInUse(loop.device)).toMatchObject({ ok: false, reason: expect.stringContaining('in use') });
    holder.kill('SIGKILL');
  });

  test('a device another process merely has open is refused, naming the process', async () => {
    const loop = createLoopDevice(16 * MiB);
    const holder = await holdOpen(loop.device, false);
    expect(checkDeviceNotInUse(loop.device)).toEqual({
      ok: false, reason: expect.stringContaining(`held open by process ${holder.pid} (node)`),
    });
    holder.kill('SIGKILL');
  });

  test('a regular file is not a block device', () => {
    const file = path.join(makeTempDir(), 'disk.img');
    fs.writeFileSync(file, 'x');
    expect(checkDeviceNotInUse(file)).toEqual({ ok: false, reason: `"${file}" is not a block device` });
  });
});
