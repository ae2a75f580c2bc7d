/**
 * The device dialect's wipe, read back from the loop devices' backing files.
 * By default every byte of the device reads zero, wherever the old data was.
 * With `wipe: upstream-ranges` (opt-in): 100 MiB at 0, 1, 10, 100 and 1000 GiB
 * that lie inside the device, clipped at its end, and nothing else. Loop devices
 * are whole 512-byte sectors, so "below 1 GiB" is 1 GiB - 512. The 10 TiB device
 * is a sparse file and must stay one (a whole-device zeroing of it would allocate
 * 10 TiB on this machine's disk: it is only ever wiped over upstream's ranges).
 */
import * as fs from 'node:fs';
import { blockSpec, DeviceFixture, fillPattern, GiB, isZero, KiB, MiB, NODE_NAME, readBytes, SMALL } from './fixture';
import { upstreamDevicePVName } from '../../../src/runtime/pv';
import { parseQuantity } from '../../../src/runtime/volume';
import { cleanupPrivileged, describePrivileged } from '../../support/privileged';


const TiB = 1024 * GiB;
const WINDOW = 4 * KiB;
const PATTERN = 0xa5;

/** Upstream's ranges, written out independently of the runtime's wipeRanges(). */
function expectedRanges(size: number): Array<[number, number]> {
  return [0, 1, 10, 100, 1000].map((g) => g * GiB).filter((o) => o < size).map((o) => [o, Math.min(o + 100 * MiB, size)]);
}

/** Windows of user data just inside and just outside each range's ends, between ranges, and at the device's end. */
function probeWindows(size: number): number[] {
  const points = new Set<number>([size - WINDOW, 500 * MiB, 5 * GiB]);
  for (const [start, end] of expectedRanges(size)) {
    for (const p of [start - WINDOW, start, end - WINDOW, end]) points.add(p);
  }
  return [...points].filter((p) => p >= 0 && p + WINDOW <= size).sort((a, b) => a - b);
}

const inRanges = (size: number, offset: number) => expectedRanges(size).some(([s, e]) => offset >= s && offset < e);

describePrivileged('device dialect: the default wipe zeroes the whole device', () => {
  let fx: DeviceFixture;
  afterEach(async () => fx?.stop());
  afterAll(cleanupPrivileged);

  test.each([
    ['1 GiB - 512', GiB - 512],
    ['1 GiB + 5 KiB', GiB + 5 * KiB],
  ])('a new device of %s: no byte of the old data is readable anywhere, inside upstream\'s ranges or between them', async (_, size) => {
    fx = await DeviceFixture.start({ defaultPvSpecConfigMap: 'spec' });
    const disk = fx.addDevice('sda', size);
    fillPattern(disk.link, 0, size, PATTERN);
    await fx.setSpec('spec', blockSpec(fx.deviceDir));

    const started = Date.now();
    const result = await fx.pass();
    const seconds = (Date.now() - started) / 1000;
    expect(result.state === 'provisioned' && result.created).toEqual([upstreamDevicePVName(NODE_NAME, 'sda')]);
    process.stdout.write(`whole wipe of a ${size} B device: pass took ${seconds.toFixed(2)} s\n`);
    expect(isZero(disk.backingFile, 0, size)).toBe(true);
    expect(parseQuantity((await fx.serverPv(upstreamDevicePVName(NODE_NAME, 'sda')))!.spec?.capacity?.storage)).toBe(size);
  });

  test('a Released PV\'s device is zeroed whole before it is offered again', async () => {
    const size = GiB + 5 * KiB;
    fx = await DeviceFixture.start({ defaultPvSpecConfigMap: 'spec' });
    const disk = fx.addDevice('sda', size);
    await fx.setSpec('spec', blockSpec(fx.deviceDir));
    await fx.pass();
    const name = upstreamDevicePVName(NODE_NAME, 'sda');
    const uid = (await fx.serverPv(name))!.metadata!.uid!;
    // The tenant's data, everywhere upstream's wipe would have left it too.
    fillPattern(disk.link, 0, size, PATTERN);
    await fx.release(name);
    await fx.pass();
    await fx.settle();
    await fx.waitForPvGone(name, uid);
    expect(isZero(disk.backingFile, 0, size)).toBe(true);
  });

  test('a small device is wiped whole, and its first 5 KiB read zero', async () => {
    fx = await DeviceFixture.start({ defaultPvSpecConfigMap: 'spec' });
    const disk = fx.addDevice('sda');
    fillPattern(disk.link, 0, SMALL, PATTERN);
    await fx.setSpec('spec', blockSpec(fx.deviceDir));
    await fx.pass();
    expect(readBytes(disk.backingFile, 0, 5 * KiB).every((b) => b === 0)).toBe(true);
    expect(isZero(disk.backingFile, 0, SMALL)).toBe(true);
  });
});

/** The spec's `wipe: upstream-ranges` brings back the device provisioner's ranges, on a new device and on a Released one. */
describePrivileged('device dialect: wipe: upstream-ranges zeroes only upstream\'s ranges', () => {
  let fx: DeviceFixture;
  afterEach(async () => fx?.stop());
  afterAll(cleanupPrivileged);

  test.each([
    ['1 GiB - 512', GiB - 512],
    ['1 GiB', GiB],
    ['1 GiB + 5 KiB', GiB + 5 * KiB],
    ['1 GiB + 10 KiB', GiB + 10 * KiB],
    ['2 GiB', 2 * GiB],
    ['10 TiB (sparse)', 10 * TiB],
  ])('a new device of %s: exactly the ranges inside it read zero, the rest keeps its data', async (_, size) => {
    fx = await DeviceFixture.start({ defaultPvSpecConfigMap: 'spec' });
    const disk = fx.addDevice('sda', size);
    const windows = probeWindows(size);
    for (const w of windows) fillPattern(disk.link, w, WINDOW, PATTERN);
    await fx.setSpec('spec', blockSpec(fx.deviceDir, { wipe: 'upstream-ranges' }));

    const started = Date.now();
    const result = await fx.pass();
    const seconds = (Date.now() - started) / 1000;
    expect(result.state === 'provisioned' && result.created).toEqual([upstreamDevicePVName(NODE_NAME, 'sda')]);
    process.stdout.write(`wipe of a ${size} B device (${expectedRanges(size).length} range(s)): pass took ${seconds.toFixed(2)} s\n`);

    for (const [start, end] of expectedRanges(size)) expect([start, end, isZero(disk.backingFile, start, end - start)]).toEqual([start, end, true]);
    for (const w of windows) {
      if (inRanges(size, w)) continue;
      expect([w, readBytes(disk.backingFile, w, WINDOW).every((b) => b === PATTERN)]).toEqual([w, true]);
    }
    const pv = (await fx.serverPv(upstreamDevicePVName(NODE_NAME, 'sda')))!;
    expect(parseQuantity(pv.spec?.capacity?.storage)).toBe(size);
    // Sparse stays sparse: only the ranges (and the test's windows) are allocated.
    const allocated = fs.statSync(disk.backingFile).blocks * 512;
    const written = expectedRanges(size).reduce((sum, [s, e]) => sum + e - s, 0) + windows.length * WINDOW;
    expect(allocated).toBeLessThanOrEqual(written + 16 * MiB);
  });

  test('a Released PV\'s device of 1 GiB + 5 KiB is wiped over the same ranges before it is offered again', async () => {
    const size = GiB + 5 * KiB;
    fx = await DeviceFixture.start({ defaultPvSpecConfigMap: 'spec' });
    const disk = fx.addDevice('sda', size);
    await fx.setSpec('spec', blockSpec(fx.deviceDir, { wipe: 'upstream-ranges' }));
    await fx.pass();
    const name = upstreamDevicePVName(NODE_NAME, 'sda');
    const uid = (await fx.serverPv(name))!.metadata!.uid!;
    const windows = probeWindows(size);
    for (const w of windows) fillPattern(disk.link, w, WINDOW, PATTERN);
    await fx.release(name);
    await fx.pass();
    await fx.settle();
    await fx.waitForPvGone(name, uid);
    for (const [start, end] of expectedRanges(size)) expect(isZero(disk.backingFile, start, end - start)).toBe(true);
    for (const w of windows.filter((x) => !inRanges(size, x))) expect(readBytes(disk.backingFile, w, WINDOW).every((b) => b === PATTERN)).toBe(true);
  });
});
