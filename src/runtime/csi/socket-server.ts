/**
 * A gRPC server on a unix socket, as kubelet reaches node plugins: one for the CSI
 * services, one for kubelet's plugin registration. A runner (lifecycle/runners.ts):
 * started, it listens; stopped, it finishes the calls in flight (or, past a grace, ends
 * them) and removes its socket, so that kubelet sees the plugin go.
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Server, ServerCredentials, type ServiceDefinition, type UntypedServiceImplementation } from '@grpc/grpc-js';
import type { Runner } from '../lifecycle/runners';

/** How long calls in flight get to finish when the server stops. */
const STOP_GRACE_MS = 5_000;
/** The longest path a unix socket can be bound at (sun_path holds 108 bytes with its terminating NUL). */
const MAX_SOCKET_PATH_BYTES = 107;

export interface SocketService {
  readonly definition: ServiceDefinition;
  readonly implementation: UntypedServiceImplementation;
}

export class SocketServer implements Runner {
  private server: Server | undefined;
  /** The socket this server bound (its inode): the one it removes when it stops. */
  private bound: bigint | undefined;

  constructor(readonly socketPath: string, private readonly services: readonly SocketService[]) {}

  async start(): Promise<void> {
    const bytes = Buffer.byteLength(this.socketPath);
    if (bytes > MAX_SOCKET_PATH_BYTES) {
      throw new Error(`cannot serve gRPC on ${this.socketPath}: the path is ${bytes} bytes, and a unix socket's path holds at most ${MAX_SOCKET_PATH_BYTES}; `
        + 'give kubelet\'s directory by a shorter path (--kubelet-dir)');
    }
    removeStaleSocket(this.socketPath);
    fs.mkdirSync(path.dirname(this.socketPath), { recursive: true });
    const server = new Server();
    for (const s of this.services) server.addService(s.definition, s.implementation);
    // Bound under a name of its own, then renamed into place: closing a unix socket's server unlinks the name it was bound
    // under, which must never be the path an agent started meanwhile (a DaemonSet rolled with surge) serves on. The name is
    // no longer than the socket's own, so that any path a socket can be served at can be bound.
    const own = path.join(path.dirname(this.socketPath), `.${randomBytes(3).toString('hex')}`);
    await new Promise<void>((resolve, reject) => server.bindAsync(`unix://${own}`, ServerCredentials.createInsecure(), (e) => {
      if (e) reject(new Error(`cannot serve gRPC on ${this.socketPath}: ${e.message}`));
      else resolve();
    }));
    this.bound = fs.lstatSync(own, { bigint: true }).ino;
    fs.renameSync(own, this.socketPath);
    this.server = server;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    await new Promise<void>((resolve) => {
      const force = setTimeout(() => server.forceShutdown(), STOP_GRACE_MS);
      server.tryShutdown(() => {
        clearTimeout(force);
        resolve();
      });
    });
    // Only its own: an agent that started meanwhile (a DaemonSet rolled with surge) bound its socket at this path.
    if (fs.lstatSync(this.socketPath, { bigint: true, throwIfNoEntry: false })?.ino === this.bound) fs.unlinkSync(this.socketPath);
  }
}

/**
 * Removes a socket left by an earlier process (a crashed agent's): only a socket. Anything
 * else at that path is not ours to remove, and is said.
 */
function removeStaleSocket(socketPath: string): void {
  const stat = fs.lstatSync(socketPath, { throwIfNoEntry: false });
  if (!stat) return;
  if (!stat.isSocket()) throw new Error(`cannot serve gRPC on ${socketPath}: something other than a socket is there`);
  fs.unlinkSync(socketPath);
}
