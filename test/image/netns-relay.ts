/**
 * The far end of PrivateNetwork (private-network.ts), run as a process of its own
 * under `unshare --net`: it brings the new network namespace's loopback up and
 * relays connections between that namespace and the test's through Unix sockets,
 * which belong to the filesystem and so reach across network namespaces.
 *
 * Arguments: a JSON array of relays, each `{ listen, connect }` where either side is
 * `{ port }` (TCP on 127.0.0.1 in this namespace) or `{ path }` (a Unix socket).
 * Prints `ready` once every relay listens; runs until it is killed.
 */
import { execFileSync } from 'node:child_process';
import * as net from 'node:net';

type Endpoint = { readonly port: number } | { readonly path: string };

interface Relay {
  readonly listen: Endpoint;
  readonly connect: Endpoint;
}

function address(e: Endpoint): net.NetConnectOpts & net.ListenOptions {
  return 'port' in e ? { host: '127.0.0.1', port: e.port } : { path: e.path };
}

export interface RunningRelay {
  /** Stops listening and drops the connections it relays. */
  close(): Promise<void>;
}

/** Listens on `listen` and pipes each connection to a new one to `connect`. */
export function relay(r: Relay): Promise<RunningRelay> {
  const open = new Set<net.Socket>();
  const server = net.createServer((inbound) => {
    const outbound = net.connect(address(r.connect));
    for (const socket of [inbound, outbound]) {
      open.add(socket);
      socket.on('close', () => open.delete(socket));
    }
    inbound.pipe(outbound).pipe(inbound);
    inbound.on('error', () => outbound.destroy());
    outbound.on('error', () => inbound.destroy());
  });
  const close = () => new Promise<void>((resolve) => {
    server.close(() => resolve());
    for (const socket of open) socket.destroy();
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(address(r.listen), () => resolve({ close }));
  });
}

async function main(): Promise<void> {
  execFileSync('ip', ['link', 'set', 'lo', 'up']);
  const relays = JSON.parse(process.argv[2]) as Relay[];
  await Promise.all(relays.map(relay));
  process.stdout.write('ready\n');
}

if (require.main === module) {
  main().catch((e) => {
    process.stderr.write(`${(e as Error).stack}\n`);
    process.exit(1);
  });
}
