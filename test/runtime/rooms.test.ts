/**
 * The runtime's rooms (src/runtime/<room>/) and their order: a room imports only rooms of
 * lower layers, so the map a newcomer reads is the map the code keeps. The agent's wiring
 * (agent/) is the one room that brings static volumes, pools, snapshots and the CSI
 * services together; the command line (cli/) starts it.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

const RUNTIME = path.join(__dirname, '../../src/runtime');

/** Lowest first; rooms of one layer do not import each other. The files at the top of src/runtime are the lowest layer. */
const LAYERS: readonly (readonly string[])[] = [
  ['volume', 'observability', 'well-known', 'startup-error', 'code-unit-order'],
  ['kube', 'pv', 'record'],
  ['discovery', 'lifecycle'],
  ['cleanup', 'node-cleanup'],
  // Static volumes (the two dialects the agent replaces), and pools (volumes made from a node's own storage).
  ['static', 'pool'],
  // What is built on pools: kubelet's CSI services, the snapshotter, the plan a person reads.
  ['csi', 'snapshots', 'plan'],
  // The agent's wiring: one owner that starts every part in order and stops them in reverse.
  ['agent'],
  ['cli'],
];
const layerOf = new Map(LAYERS.flatMap((rooms, layer) => rooms.map((room) => [room, layer] as const)));

/** Every room another room's file imports (an import, or a require of a part loaded only when needed). */
function crossings(): Array<{ file: string; from: string; to: string }> {
  const found: Array<{ file: string; from: string; to: string }> = [];
  for (const room of fs.readdirSync(RUNTIME).filter((e) => fs.statSync(path.join(RUNTIME, e)).isDirectory())) {
    for (const file of fs.readdirSync(path.join(RUNTIME, room), { recursive: true }).map(String).filter((f) => f.endsWith('.ts'))) {
      const text = fs.readFileSync(path.join(RUNTIME, room, file), 'utf8');
      for (const m of text.matchAll(/(?:from\s+|require\()'\.\.\/([a-z-]+)/g)) if (m[1] !== room) found.push({ file: `${room}/${file}`, from: room, to: m[1] });
    }
  }
  return found;
}

test('every room of src/runtime has its layer', () => {
  const rooms = fs.readdirSync(RUNTIME).map((e) => e.replace(/\.ts$/, ''));
  expect(rooms.filter((r) => !layerOf.has(r))).toEqual([]);
});

test('a room imports only rooms of lower layers', () => {
  const upward = crossings().filter((c) => layerOf.get(c.to)! >= layerOf.get(c.from)!).map((c) => `${c.file} imports ${c.to}`);
  expect(upward).toEqual([]);
});
