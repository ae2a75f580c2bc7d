import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { cleanupPrivileged, createLoopDevice, describePrivileged, makeMountPoint, makeTempDir, mkfsExt4, mount } from '../../support/privileged';

afterAll(cleanupPrivileged);

const SCRIPTS = path.resolve(__dirname, '../../../image/scripts');
const MiB = 1024 * 1024;

function runScript(name: string, args: string[], env: Record<string, string>): { status: number | null; output: string } {
  const r = spawnSync(path.join(SCRIPTS, name), args, { env: { ...process.env, ...env }, encoding: 'utf8' });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

/** blkid's low-level probe: the TYPE found, or undefined when there is no signature at all. */
function signature(device: string): string | undefined {
  const r = spawnSync('blkid', ['-p', '-o', 'value', '-s', 'TYPE', device], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

function deviceReadsZero(device: string): boolean {
  const fd = fs.openSync(device, 'r');
  const buffer = Buffer.alloc(4 * MiB);
  const zeros = Buffer.alloc(4 * MiB);
  try {
    for (let pos = 0; ; pos += buffer.length) {
      const n = fs.readSync(fd, buffer, 0, buffer.length, pos);
      if (n === 0) return true;
      if (!buffer.subarray(0, n).equals(zeros.subarray(0, n))) return false;
    }
  } finally {
    fs.closeSync(fd);
  }
}

/** A small loop device holding an ext4 filesystem with a file on it. */
function ext4Device(): string {
  const loop = createLoopDevice(64 * MiB);
  mkfsExt4(loop.device);
  expect(signature(loop.device)).toBe('ext4');
  return loop.device;
}

describePrivileged('the cleaner scripts', () => {
  test('quick_reset.sh leaves no signature on an ext4 device', () => {
    const device = ext4Device();
    const r = runScript('quick_reset.sh', [], { LOCAL_PV_BLKDEVICE: device });
    expect(r).toMatchObject({ status: 0 });
    expect(signature(device)).toBeUndefined();
  });

  test('shred.sh 1 overwrites and finally zeroes the whole device', () => {
    const device = ext4Device();
    const r = runScript('shred.sh', ['1'], { LOCAL_PV_BLKDEVICE: device });
    expect(r).toMatchObject({ status: 0 });
    expect(r.output).toContain('pass 2/2 (000000)');
    expect(deviceReadsZero(device)).toBe(true);
    expect(signature(device)).toBeUndefined();
  });

  test('shred.sh refuses a missing or non-numeric pass count', () => {
    const device = ext4Device();
    expect(runScript('shred.sh', [], { LOCAL_PV_BLKDEVICE: device }).status).toBe(1);
    expect(runScript('shred.sh', ['two'], { LOCAL_PV_BLKDEVICE: device }).status).toBe(1);
    expect(signature(device)).toBe('ext4');
  });

  test('dd_zero.sh zeroes the whole device', () => {
    const device = ext4Device();
    const r = runScript('dd_zero.sh', [], { LOCAL_PV_BLKDEVICE: device });
    expect(r).toMatchObject({ status: 0 });
    expect(deviceReadsZero(device)).toBe(true);
    expect(signature(device)).toBeUndefined();
  });

  test('blkdiscard.sh discards the whole device (a loop device then reads zero)', () => {
    const device = ext4Device();
    const r = runScript('blkdiscard.sh', [], { LOCAL_PV_BLKDEVICE: device });
    expect(r).toMatchObject({ status: 0 });
    expect(r.output).toMatch(/Discarded \d+ bytes/);
    expect(deviceReadsZero(device)).toBe(true);
    expect(signature(device)).toBeUndefined();
  });

  test.each([
    ['quick_reset.sh', []],
    ['shred.sh', ['1']],
    ['dd_zero.sh', []],
    ['blkdiscard.sh', []],
  ])('%s refuses a target that is not a block device and leaves it alone', (script, args) => {
    const file = path.join(makeTempDir(), 'not-a-device');
    fs.writeFileSync(file, 'keep');
    const r = runScript(script, args, { LOCAL_PV_BLKDEVICE: file });
    expect(r.status).toBe(1);
    expect(r.output).toContain('is not a block device');
    expect(fs.readFileSync(file, 'utf8')).toBe('keep');
  });

  test.each(['quick_reset.sh', 'dd_zero.sh', 'blkdiscard.sh'])('%s refuses to run without LOCAL_PV_BLKDEVICE', (script) => {
    const env = { ...process.env };
    delete env.LOCAL_PV_BLKDEVICE;
    const r = spawnSync(path.join(SCRIPTS, script), [], { env, encoding: 'utf8' });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('LOCAL_PV_BLKDEVICE is not set');
  });

  test('a block script refuses a mounted device (the tools open it exclusively)', () => {
    const device = ext4Device();
    mount(device, path.join(makeTempDir(), 'mnt'));
    expect(runScript('quick_reset.sh', [], { LOCAL_PV_BLKDEVICE: device }).status).not.toBe(0);
    expect(signature(device)).toBe('ext4');
  });

  test('fsclean.sh on a directory of 100 files leaves none and keeps the directory', () => {
    const dir = path.join(makeTempDir(), 'vol');
    makeMountPoint(dir);
    for (let i = 0; i < 100; i++) fs.writeFileSync(path.join(dir, `file-${i}`), 'x');
    fs.mkdirSync(path.join(dir, 'sub/deeper'), { recursive: true });
    fs.chmodSync(path.join(dir, 'sub'), 0o555);
    const r = runScript('fsclean.sh', [], { LOCAL_PV_FILESYSTEM: dir });
    expect(r).toMatchObject({ status: 0 });
    expect(fs.readdirSync(dir)).toEqual([]);
  });

  test('fsclean.sh takes the directory as its argument too, and never follows a symlink out', () => {
    const base = makeTempDir();
    const dir = path.join(base, 'vol');
    fs.mkdirSync(dir);
    fs.mkdirSync(path.join(base, 'outside'));
    fs.writeFileSync(path.join(base, 'outside/precious'), 'keep');
    fs.symlinkSync(path.join(base, 'outside'), path.join(dir, 'link'));
    expect(runScript('fsclean.sh', [dir], {})).toMatchObject({ status: 0 });
    expect(fs.readdirSync(dir)).toEqual([]);
    expect(fs.readFileSync(path.join(base, 'outside/precious'), 'utf8')).toBe('keep');
  });

  test('fsclean.sh refuses a target that is not a directory', () => {
    const file = path.join(makeTempDir(), 'file');
    fs.writeFileSync(file, 'keep');
    const r = runScript('fsclean.sh', [file], {});
    expect(r.status).toBe(1);
    expect(r.output).toContain('is not a directory');
    expect(fs.readFileSync(file, 'utf8')).toBe('keep');
  });

  test('fsclean.sh refuses a directory with a mount point inside and deletes nothing', () => {
    const dir = path.join(makeTempDir(), 'vol');
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, 'mine'), 'x');
    mount('tmpfs', path.join(dir, 'inner'), { type: 'tmpfs' });
    fs.writeFileSync(path.join(dir, 'inner/other'), 'not ours');
    const r = runScript('fsclean.sh', [dir], {});
    expect(r.status).toBe(1);
    expect(r.output).toContain('has mount points inside it');
    expect(fs.existsSync(path.join(dir, 'mine'))).toBe(true);
    expect(fs.readFileSync(path.join(dir, 'inner/other'), 'utf8')).toBe('not ours');
  });
});
