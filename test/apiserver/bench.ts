/**
 * Benchmark of the test API server: prints start time, the time to create and
 * to list 10 000 PersistentVolumes (raw HTTP and through client-node), a
 * selective list, paging, and memory. Figures, not assertions; compare ratios
 * within one run.
 *   npx ts-node --transpile-only -P test/tsconfig.json test/apiserver/bench.ts [count]
 */
import { performance } from 'node:perf_hooks';

const COUNT = Number(process.argv[2] ?? 10000);

function pv(i: number) {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name: `local-pv-${String(i).padStart(6, '0')}`, labels: { 'local.storage.k8s.io/node': `node-${i % 100}` } },
    spec: {
      capacity: { storage: '100Gi' },
      accessModes: ['ReadWriteOnce'],
      storageClassName: 'local',
      local: { path: `/mnt/disks/vol${i}` },
      nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [`node-${i % 100}`] }] }] } },
    },
  };
}

const ms = (t: number) => `${t.toFixed(1)} ms`;

async function timed<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const t0 = performance.now();
  const v = await fn();
  return [v, performance.now() - t0];
}

/** Median of `n` runs, in ms. */
async function median(n: number, fn: () => Promise<unknown>): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < n; i++) times.push((await timed(fn))[1]);
  times.sort((a, b) => a - b);
  return times[Math.floor(n / 2)];
}

async function main(): Promise<void> {
  // require, not import(): the module load is part of what is measured, and import() would go through the ESM loader.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const [mod, loadTime] = await timed(async () => require('./index') as typeof import('./index'));
  const [server, startTime] = await timed(() => mod.startTestApiServer());
  const { CoreV1Api } = await import('@kubernetes/client-node');
  const api = server.kubeConfig().makeApiClient(CoreV1Api);
  const auth = { Authorization: `Bearer ${server.tokenFor('admin')}` };
  console.log(`module load                 ${ms(loadTime)}`);
  console.log(`start (listening)           ${ms(startTime)}`);

  let next = 0;
  const [, createTime] = await timed(async () => {
    await Promise.all(Array.from({ length: 16 }, async () => {
      while (next < COUNT) {
        const body = JSON.stringify(pv(next++));
        const res = await fetch(`${server.url}/api/v1/persistentvolumes`, { method: 'POST', headers: { ...auth, 'Content-Type': 'application/json' }, body });
        if (res.status !== 201) throw new Error(`create: ${res.status} ${await res.text()}`);
        await res.arrayBuffer();
      }
    }));
  });
  console.log(`create ${COUNT} PVs over HTTP   ${ms(createTime)} (${((COUNT / createTime) * 1000).toFixed(0)}/s, 16 in flight)`);
  await new Promise((r) => setTimeout(r, 200));

  let bytes = 0;
  const raw = await median(5, async () => {
    const res = await fetch(`${server.url}/api/v1/persistentvolumes`, { headers: auth });
    bytes = (await res.arrayBuffer()).byteLength;
  });
  console.log(`list ${COUNT} PVs, raw HTTP     ${ms(raw)} median of 5 (${(bytes / 1e6).toFixed(1)} MB)`);
  const parsed = await median(5, async () => {
    const res = await fetch(`${server.url}/api/v1/persistentvolumes`, { headers: auth });
    JSON.parse(await res.text());
  });
  console.log(`list ${COUNT} PVs, HTTP + parse ${ms(parsed)} median of 5`);
  let items = 0;
  const client = await median(3, async () => {
    items = (await api.listPersistentVolume()).items.length;
  });
  console.log(`list ${COUNT} PVs, client-node  ${ms(client)} median of 3 (${items} items)`);
  const selective = await median(5, async () => {
    await api.listPersistentVolume({ labelSelector: 'local.storage.k8s.io/node=node-7' });
  });
  console.log(`list by label (1/100 match)  ${ms(selective)} median of 5`);
  const [pages, paged] = await timed(async () => {
    let cont: string | undefined;
    let n = 0;
    do {
      const page = await api.listPersistentVolume({ limit: 500, _continue: cont });
      cont = page.metadata?._continue;
      n++;
    } while (cont);
    return n;
  });
  console.log(`list in pages of 500         ${ms(paged)} (${pages} pages)`);
  const mem = process.memoryUsage();
  console.log(`heap used / rss              ${(mem.heapUsed / 1e6).toFixed(0)} MB / ${(mem.rss / 1e6).toFixed(0)} MB (server and client in one process)`);
  console.log('counters', JSON.stringify(server.counters.snapshot()));
  await server.stop();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
