import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import { writeGpt, writeMbr } from './partition-table-fixtures';
import { describeProbe, probeSignatures } from '../../../src/runtime/volume';
import { cleanupPrivileged, createLoopDevice, describePrivileged, mkfsExt4 } from '../../support/privileged';

const SIZE = 64 * 1024 * 1024;

describePrivileged('probeSignatures on loop devices', () => {
  afterAll(cleanupPrivileged);

  test('a zeroed device is blank', async () => {
    const loop = createLoopDevice(SIZE);
    const probe = await probeSignatures(loop.device);
    expect(probe).toEqual({ state: 'blank', signatures: [] });
    expect(describeProbe(probe)).toBe('blank');
  });

  test('a device with ext4 holds data, and the probe names the ext4 superblock', async () => {
    const loop = createLoopDevice(SIZE);
    mkfsExt4(loop.device);
    const probe = await probeSignatures(loop.device);
    expect(probe.state).toBe('holds-data');
    expect(probe.signatures).toEqual([expect.objectContaining({ type: 'ext4', usage: 'filesystem', offset: 0x438 })]);
    expect(describeProbe(probe)).toBe('holds data: ext4 filesystem at 0x438');
  });

  test('a device with a GPT holds data: our read and libblkid both see the table', async () => {
    const loop = createLoopDevice(SIZE);
    writeGpt(loop.device, SIZE);
    const probe = await probeSignatures(loop.device);
    expect(probe.state).toBe('holds-data');
    const types = probe.signatures.map((s) => `${s.type}@${s.offset}`);
    // PMBR comes only from libblkid; the backup header at the end proves it checked the whole table.
    expect(types).toEqual(expect.arrayContaining(['PMBR@510', 'gpt@512', `gpt@${SIZE - 512}`]));
  });

  test('a device with an MBR partition table holds data', async () => {
    const loop = createLoopDevice(SIZE);
    writeMbr(loop.device, SIZE);
    const probe = await probeSignatures(loop.device);
    expect(probe.state).toBe('holds-data');
    expect(probe.signatures).toEqual([{ type: 'dos', usage: 'partition-table', offset: 0x1fe }]);
  });

  test('a swap signature holds data', async () => {
    const loop = createLoopDevice(SIZE);
    execFileSync('mkswap', [loop.device], { stdio: 'ignore' });
    const probe = await probeSignatures(loop.device);
    expect(probe.signatures.map((s) => s.type)).toEqual(['swap']);
  });

  test('a Ceph BlueStore label holds data', async () => {
    const loop = createLoopDevice(SIZE);
    const fd = fs.openSync(loop.device, 'r+');
    fs.writeSync(fd, Buffer.from('bluestore block device\n6fb6b8d5-0000-0000-0000-000000000000\n'), 0, undefined, 0);
    fs.closeSync(fd);
    const probe = await probeSignatures(loop.device);
    expect(probe).toMatchObject({ state: 'holds-data', signatures: [{ type: 'ceph_bluestore', offset: 0 }] });
  });

  test('without wipefs the answer is unknown, never blank', async () => {
    const loop = createLoopDevice(SIZE);
    const probe = await probeSignatures(loop.device, { command: '/nonexistent/wipefs' });
    expect(probe.state).toBe('unknown');
    expect(describeProbe(probe)).toMatch(/^unknown, treated as holding data: \/nonexistent\/wipefs .* failed/);
  });

  test('without wipefs a partition table is still found by our own read', async () => {
    const loop = createLoopDevice(SIZE);
    writeGpt(loop.device, SIZE);
    const probe = await probeSignatures(loop.device, { command: '/nonexistent/wipefs' });
    expect(probe).toMatchObject({ state: 'unknown', signatures: [{ type: 'gpt', offset: 512 }] });
    expect(describeProbe(probe)).toMatch(/^holds data: gpt partition-table at 0x200 \(and the probe was incomplete/);
  });
});
