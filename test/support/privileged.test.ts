import * as fs from 'node:fs';
import * as path from 'node:path';
import { cleanupPrivileged, createLoopDevice, describePrivileged, makeMountPoint, makeTempDir, mkfsExt4, mount } from './privileged';

describePrivileged('privileged test fixtures', () => {
  afterAll(cleanupPrivileged);

  test('a loop device with ext4 mounts, and its mount is visible only in our namespace table', () => {
    const loop = createLoopDevice(64 * 1024 * 1024);
    mkfsExt4(loop.device);
    const target = path.join(makeTempDir(), 'mnt');
    mount(loop.device, target);
    fs.writeFileSync(path.join(target, 'hello'), 'world');
    expect(fs.readFileSync('/proc/self/mountinfo', 'utf8')).toContain(` ${target} `);
  });

  test('a bind mount of a directory onto itself is a mount point', () => {
    const dir = path.join(makeTempDir(), 'vol1');
    makeMountPoint(dir);
    expect(fs.readFileSync('/proc/self/mountinfo', 'utf8')).toContain(` ${dir} `);
  });
});
