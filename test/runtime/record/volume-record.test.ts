import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { VolumeRecord, VolumeRecordEntry } from '../../../src/runtime/record';
import { cleanupPrivileged, makeTempDir } from '../../support/privileged';

afterAll(() => cleanupPrivileged());

const line = (identity: string, state: VolumeRecordEntry['state'] = 'dirty'): VolumeRecordEntry => ({
  identity,
  state,
  dialect: 'directory',
  storageClass: 'fast',
  hostPath: `/mnt/fast/${identity}`,
  volumeMode: 'Filesystem',
  reclaimPolicy: 'Delete',
  reason: 'test',
  since: '2026-11-27T00:00:00.000Z',
});

async function write(record: VolumeRecord, ...entries: VolumeRecordEntry[]): Promise<void> {
  await record.update(() => ({ writes: entries, result: undefined }));
}

describe('the volume record on disk', () => {
  test('a line written is read back by a new process\'s record (it survives a restart)', async () => {
    const dir = makeTempDir('lvp-record-');
    await write(VolumeRecord.open(dir).record, line('fs:/@wwid:a'));
    expect(VolumeRecord.open(dir).record.get('fs:/@wwid:a')).toMatchObject({ state: 'dirty', hostPath: '/mnt/fast/fs:/@wwid:a' });
  });

  test('a missing state directory is made, and said to be made (no host directory was mounted there)', () => {
    const dir = path.join(makeTempDir('lvp-record-'), 'state');
    const opened = VolumeRecord.open(dir);
    expect(opened.madeDirectory).toBe(true);
    expect(opened.record.health().ok).toBe(true);
    expect(VolumeRecord.open(dir).madeDirectory).toBe(false);
  });

  test('lines another agent writes are seen on the next refresh', async () => {
    const dir = makeTempDir('lvp-record-');
    const mine = VolumeRecord.open(dir).record;
    const before = mine.revision;
    await write(VolumeRecord.open(dir).record, line('wwid:other'));
    mine.refresh();
    expect(mine.get('wwid:other')?.state).toBe('dirty');
    expect(mine.revision).not.toBe(before);
  });

  test('a damaged file makes the whole record unusable when it is read, naming the file, and an update refuses', async () => {
    const dir = makeTempDir('lvp-record-');
    await write(VolumeRecord.open(dir).record, line('fs:/@wwid:a'));
    const [file] = fs.readdirSync(path.join(dir, 'volumes'));
    fs.writeFileSync(path.join(dir, 'volumes', file), '{"identity": "fs:/@wwid:a", "sta');
    const record = VolumeRecord.open(dir).record;
    const health = record.health();
    expect(health).toEqual({ ok: false, problem: expect.stringContaining(path.join(dir, 'volumes', file)) });
    await expect(write(record, line('wwid:b'))).rejects.toThrow(/is not JSON/);
  });

  test('a line with an unknown state is refused by name', async () => {
    const dir = makeTempDir('lvp-record-');
    await write(VolumeRecord.open(dir).record, line('fs:/@wwid:a'));
    const [file] = fs.readdirSync(path.join(dir, 'volumes'));
    fs.writeFileSync(path.join(dir, 'volumes', file), JSON.stringify({ ...line('fs:/@wwid:a'), state: 'sparkling' }));
    expect(VolumeRecord.open(dir).record.health()).toEqual({ ok: false, problem: expect.stringMatching(/field "state" must be one of clean, offered, dirty/) });
  });

  test('a line keeps the root metadata it was first offered with; one edited into nonsense is refused by name', async () => {
    const dir = makeTempDir('lvp-record-');
    const rootMetadata = { mode: 0o1777, uid: 1000, gid: 1000, xattrs: { 'user.team': Buffer.from('data').toString('base64') } };
    await write(VolumeRecord.open(dir).record, { ...line('fs:/@wwid:a'), rootMetadata });
    expect(VolumeRecord.open(dir).record.get('fs:/@wwid:a')?.rootMetadata).toEqual(rootMetadata);
    const [file] = fs.readdirSync(path.join(dir, 'volumes'));
    fs.writeFileSync(path.join(dir, 'volumes', file), JSON.stringify({ ...line('fs:/@wwid:a'), rootMetadata: { ...rootMetadata, mode: -1 } }));
    expect(VolumeRecord.open(dir).record.health()).toEqual({ ok: false, problem: expect.stringMatching(/field "rootMetadata": .*mode must be an integer/) });
  });

  test('the state directory deleted while the agent runs makes the record unusable', async () => {
    const dir = makeTempDir('lvp-record-');
    const record = VolumeRecord.open(dir).record;
    await write(record, line('fs:/@wwid:a'));
    fs.rmSync(dir, { recursive: true });
    expect(record.refresh()).toEqual({ ok: false, problem: expect.stringMatching(/is gone/) });
  });

  test('a record whose marker is gone while it holds lines is damaged, not made anew', async () => {
    const dir = makeTempDir('lvp-record-');
    await write(VolumeRecord.open(dir).record, line('fs:/@wwid:a'));
    fs.rmSync(path.join(dir, 'record.json'));
    expect(VolumeRecord.open(dir).record.health()).toEqual({ ok: false, problem: expect.stringMatching(/record\.json is missing while .* holds 1 volume/) });
  });

  test('two agents updating at once are serialized: each sees the other\'s line', async () => {
    const dir = makeTempDir('lvp-record-');
    const a = VolumeRecord.open(dir).record;
    const b = VolumeRecord.open(dir).record;
    const seen: number[] = [];
    await Promise.all([
      a.update((r) => { seen.push(r.entries().length); return { writes: [line('wwid:a')], result: undefined }; }),
      b.update((r) => { seen.push(r.entries().length); return { writes: [line('wwid:b')], result: undefined }; }),
    ]);
    expect(seen.sort()).toEqual([0, 1]);
  });

  test('changes asked while another agent holds the lock are made in order under one hold, each seeing the ones before', async () => {
    const dir = makeTempDir('lvp-record-');
    const record = VolumeRecord.open(dir).record;
    // Another agent holds the lock until told to let go.
    const holder = spawn('flock', ['--exclusive', path.join(dir, 'lock'), 'sh', '-c', 'echo held; read line'], { stdio: ['pipe', 'pipe', 'inherit'] });
    await new Promise((resolve) => holder.stdout.once('data', resolve));
    const seen: string[][] = [];
    const changes = ['wwid:a', 'wwid:b', 'wwid:c'].map((identity) => record.update((r) => {
      seen.push(r.entries().map((e) => e.identity).sort());
      return { writes: [line(identity)], result: identity };
    }));
    await new Promise((r) => setTimeout(r, 200));
    expect(seen).toEqual([]); // none is made while the lock is held elsewhere
    holder.stdin.end('\n');
    expect(await Promise.all(changes)).toEqual(['wwid:a', 'wwid:b', 'wwid:c']);
    expect(seen).toEqual([[], ['wwid:a'], ['wwid:a', 'wwid:b']]);
    expect(VolumeRecord.open(dir).record.entries().map((e) => e.identity).sort()).toEqual(['wwid:a', 'wwid:b', 'wwid:c']);
  });
});
