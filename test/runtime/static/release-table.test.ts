import type { CleanTarget } from '../../../src/runtime/cleanup';
import { CleaningReport, ReleaseTable } from '../../../src/runtime/static/release-table';

const report: CleaningReport = { target: { pvUid: 'uid-1', pvName: 'pv-1' } as CleanTarget, capacityBytes: 1024, type: 'process' };

describe('ReleaseTable', () => {
  test('a volume in no state may be written; a second write is refused until the first is answered', () => {
    const table = new ReleaseTable();
    expect(table.beginWrite('uid-1')).toBe(true);
    expect(table.state('uid-1')).toBe('writing');
    expect(table.beginWrite('uid-1')).toBe(false);
    table.endWrite('uid-1');
    expect(table.state('uid-1')).toBeUndefined();
    expect(table.beginWrite('uid-1')).toBe(true);
  });

  test('no write is sent for a volume being cleaned: its cleanup decides the PV at its end', () => {
    const table = new ReleaseTable();
    table.cleaning('uid-1', report);
    expect(table.beginWrite('uid-1')).toBe(false);
    table.endWrite('uid-1');
    expect(table.state('uid-1')).toBe('cleaning');
  });

  test('a cleaning reported cleaned is let go, and forgotten once its PV is no longer listed', () => {
    const table = new ReleaseTable();
    table.cleaning('uid-1', report);
    expect([...table.cleanings()]).toEqual([['uid-1', report]]);
    table.reported('uid-1', true);
    expect(table.state('uid-1')).toBe('let-go');
    table.forgetLetGoExcept(new Set(['uid-1']));
    expect(table.state('uid-1')).toBe('let-go');
    table.forgetLetGoExcept(new Set());
    expect(table.state('uid-1')).toBeUndefined();
    expect(table.busy).toBe(false);
  });

  test('a cleaning reported not cleaned leaves no state: the next pass decides again', () => {
    const table = new ReleaseTable();
    table.cleaning('uid-1', report);
    table.reported('uid-1', false);
    expect(table.state('uid-1')).toBeUndefined();
    expect([...table.cleanings()]).toEqual([]);
  });

  test('a let-go volume cannot be written: the cache may list its PV for a moment after it went', () => {
    const table = new ReleaseTable();
    table.cleaning('uid-1', report);
    table.reported('uid-1', true);
    expect(table.beginWrite('uid-1')).toBe(false);
  });

  test('busy while anything is written, cleaned or just let go', () => {
    const table = new ReleaseTable();
    expect(table.busy).toBe(false);
    table.beginWrite('uid-1');
    expect(table.busy).toBe(true);
    table.endWrite('uid-1');
    expect(table.busy).toBe(false);
  });
});
