import fc from 'fast-check';
import { dnsSubdomainProblem } from '../../../src/config';
import { assignDevicePVNames, devicePVName, upstreamDevicePVName } from '../../../src/runtime/pv';

const PUNCTUATION = '!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~';

describe('upstreamDevicePVName', () => {
  test('replaces every run of characters other than [0-9A-Za-z.] by one dash and lower-cases', () => {
    expect(upstreamDevicePVName('node1', 'pci-0000:3c:00.0-sas-0x5000C500A1B2C3D4-lun-0')).toBe(
      'local-node1-pci-0000-3c-00.0-sas-0x5000c500a1b2c3d4-lun-0',
    );
  });

  test('turns a base name made of every punctuation character but / into one trailing dash', () => {
    const baseName = PUNCTUATION.replace('/', '');
    expect(upstreamDevicePVName('node1', baseName)).toBe('local-node1-.-');
  });
});

describe('devicePVName', () => {
  test('keeps upstream names that are valid, so upstream PVs are adopted', () => {
    expect(devicePVName('node1', 'pci-0000:3c:00.0-sas-phy0-lun-0')).toEqual({
      name: 'local-node1-pci-0000-3c-00.0-sas-phy0-lun-0',
      fixed: false,
    });
    expect(devicePVName('node1', 'sda')).toEqual({ name: 'local-node1-sda', fixed: false });
  });

  test('fixes a name made of every punctuation character into a valid one with a hash', () => {
    const result = devicePVName('node1', PUNCTUATION.replace('/', ''));
    expect(result.fixed).toBe(true);
    expect(result.name).toMatch(/^local-node1-[0-9a-f]{8}$/);
    expect(dnsSubdomainProblem(result.name)).toBeUndefined();
  });

  test('fixes dots next to dashes and repeated dots', () => {
    const result = devicePVName('node1', 'disk..1_.x');
    expect(result.fixed).toBe(true);
    expect(result.name).toMatch(/^local-node1-disk\.1\.x-[0-9a-f]{8}$/);
  });

  test('a trailing punctuation character does not give another device\'s name', () => {
    expect(devicePVName('node1', 'sda_').name).not.toBe(devicePVName('node1', 'sda').name);
  });

  test('shortens a name over 253 characters, keeping a hash that tells long names apart', () => {
    const a = devicePVName('node1', `${'x'.repeat(300)}a`);
    const b = devicePVName('node1', `${'x'.repeat(300)}b`);
    expect(a.fixed).toBe(true);
    expect(a.name.length).toBe(253);
    expect(dnsSubdomainProblem(a.name)).toBeUndefined();
    expect(a.name).not.toBe(b.name);
  });

  test('keeps a name of exactly 253 characters as upstream writes it', () => {
    const baseName = 'x'.repeat(253 - 'local-node1-'.length);
    expect(devicePVName('node1', baseName)).toEqual({ name: `local-node1-${baseName}`, fixed: false });
  });

  test('always gives a valid PV name, whatever the base name', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 400 }), (baseName) => {
        expect(dnsSubdomainProblem(devicePVName('worker-1.example.com', baseName).name)).toBeUndefined();
      }),
      { numRuns: 2000 },
    );
  });
});

describe('assignDevicePVNames', () => {
  const device = (path: string) => ({ path, baseName: path.slice(path.lastIndexOf('/') + 1) });

  test('names every device when the names are distinct', () => {
    const naming = assignDevicePVNames('node1', [device('/dev/sda'), device('/dev/sdb')]);
    expect(naming.named.map((n) => n.name)).toEqual(['local-node1-sda', 'local-node1-sdb']);
    expect(naming.collisions).toEqual([]);
  });

  test('reports devices whose names collide and names none of them', () => {
    const naming = assignDevicePVNames('node1', [device('/dev/x/sd_a'), device('/dev/sdc'), device('/dev/y/sd-a')]);
    expect(naming.named.map((n) => n.device.path)).toEqual(['/dev/sdc']);
    expect(naming.collisions).toEqual([{ name: 'local-node1-sd-a', paths: ['/dev/x/sd_a', '/dev/y/sd-a'] }]);
  });

  test('says which names were fixed', () => {
    const naming = assignDevicePVNames('node1', [device('/dev/disk/weird_')]);
    expect(naming.named[0]).toMatchObject({ fixed: true, device: { path: '/dev/disk/weird_' } });
  });
});
