/**
 * Relists after failed watches, as a restarted apiserver meets them: two nodes' PV caches
 * (NodePvCache with its default backoff, client-go's) against the real apiserver, through
 * the fault proxy, whose every watch of theirs is answered 410 Gone four times, as an
 * apiserver with a new watch cache answers a watch from before its restart. Each relist
 * must wait a growing, jittered backoff: the proxy's record of when each list arrived
 * shows the waits, and the caches' own logs the delays they drew.
 */
import { localPv, serverAndApi } from './fixtures';
import { KubeApi } from '../../../src/runtime/kube/api-client';
import { KubeLogger } from '../../../src/runtime/kube/logger';
import { nodeLabelSelector, NodePvCache } from '../../../src/runtime/kube/pv-cache';
import { Kubernetes } from '../../support/kubernetes';


let server: Kubernetes;
let api: KubeApi;
const caches: NodePvCache[] = [];

beforeAll(async () => {
  ({ server, api } = await serverAndApi());
});
afterEach(async () => {
  for (const c of caches.splice(0)) await c.stop();
  server.faults.clear();
  await server.reset();
});

const FAILURES = 4;

/** A cache of `node`'s PVs as the agent makes it (default backoff), and the relist delays it drew, from its log. */
async function cacheOf(node: string): Promise<{ cache: NodePvCache; delays: number[] }> {
  const delays: number[] = [];
  const logger: KubeLogger = {
    debug: () => {},
    info: (fields, message) => {
      if (message.startsWith('watch history expired (410 Gone)')) delays.push((fields as { delayMs: number }).delayMs);
    },
    warn: () => {},
    error: () => {},
  };
  const cache = new NodePvCache(api, { nodeName: node, logger });
  caches.push(cache);
  await cache.start();
  return { cache, delays };
}

/** Waits, by condition only (no wall-clock bound of its own: jest's timeout is the limit), until `condition` holds. */
async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((r) => setTimeout(r, 20));
}

test('after repeated 410s each node relists after a growing, jittered backoff (client-go\'s: 800 ms doubling, plus up to 100 %), drawn apart from the other node\'s', async () => {
  const nodes = ['node-a', 'node-b'];
  const logs = await Promise.all(nodes.map((node) => cacheOf(node)));
  // A PV each, seen on each watch: a watch with events that the server ends is opened again at once (no failure yet).
  for (const node of nodes) await server.create(localPv(`pv-${node}`, { node }));
  await until(() => logs.every(({ cache }, i) => cache.get(`pv-${nodes[i]}`) !== undefined));
  for (const node of nodes) {
    server.faults.failNext({ verb: 'watch', resource: 'persistentvolumes', labelSelector: nodeLabelSelector(node), code: 410, count: FAILURES });
  }
  // The open watches end, as at a restart; the next ones are answered 410.
  server.faults.closeWatches();
  const lists = (node: string) => server.faults.requests({ verb: 'list', resource: 'persistentvolumes', labelSelector: nodeLabelSelector(node) });
  // The first list, then one after each 410; then a watch that stays open.
  await until(() => nodes.every((node) => lists(node).length === 1 + FAILURES) && server.openWatches === nodes.length);

  for (const [i, node] of nodes.entries()) {
    const { delays } = logs[i];
    expect(delays).toHaveLength(FAILURES);
    // Each delay is its base, 800 ms doubling, plus up to as much again at random.
    delays.forEach((delay, k) => {
      const base = 800 * 2 ** k;
      expect(delay).toBeGreaterThanOrEqual(base);
      expect(delay).toBeLessThan(2 * base);
    });
    // And each relist waited it out: the lists reached the server at least that far apart (less
    // 2 ms: the delay is logged rounded, and a timer's start is the event loop's millisecond).
    const at = lists(node).map((r) => r.at);
    for (let k = 0; k < FAILURES; k++) expect(at[k + 1] - at[k]).toBeGreaterThanOrEqual(delays[k] - 2);
  }
  // The jitter is drawn by each node: the two did not relist in step.
  expect(logs[0].delays).not.toEqual(logs[1].delays);
});
