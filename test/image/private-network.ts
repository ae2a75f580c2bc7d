/**
 * A private network namespace for a container run with host networking, as a pod
 * has a network of its own: ports inside it (the agent's `:8080`) collide with
 * nothing else on the machine. Inside, the test's API server answers at its own
 * address (127.0.0.1:<port>); the test reaches the agent's HTTP port through a Unix
 * socket. The namespace lives as long as its relay process (netns-relay.ts).
 */
import { ChildProcess, spawn } from 'node:child_process';
import * as http from 'node:http';
import * as path from 'node:path';
import { relay, RunningRelay } from './netns-relay';
import { REPO } from '../support/agent-process';

const RELAY = path.join(__dirname, 'netns-relay.ts');

export interface PrivateNetworkOptions {
  /** A directory for the relays' Unix sockets. */
  readonly work: string;
  /** The API server's port on 127.0.0.1, made to answer at the same port inside. */
  readonly apiServerPort: number;
  /** The port inside that get() reaches. */
  readonly agentPort: number;
}

export class PrivateNetwork {
  static async start(options: PrivateNetworkOptions): Promise<PrivateNetwork> {
    const apiSocket = path.join(options.work, 'api-server.sock');
    const agentSocket = path.join(options.work, 'agent.sock');
    const toApiServer = await relay({ listen: { path: apiSocket }, connect: { port: options.apiServerPort } });
    const relays = [
      { listen: { port: options.apiServerPort }, connect: { path: apiSocket } },
      { listen: { path: agentSocket }, connect: { port: options.agentPort } },
    ];
    const child = spawn('unshare', ['--net', '--', process.execPath, '-r', 'ts-node/register/transpile-only', RELAY, JSON.stringify(relays)], {
      cwd: REPO,
      env: { ...process.env, TS_NODE_PROJECT: path.join(REPO, 'test/tsconfig.json') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const network = new PrivateNetwork(child, toApiServer, agentSocket);
    await network.ready();
    return network;
  }

  private output = '';

  private constructor(private readonly child: ChildProcess, private readonly toApiServer: RunningRelay, private readonly agentSocket: string) {
    child.stdout!.on('data', (d: Buffer) => (this.output += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (this.output += d.toString()));
  }

  /** Resolves once the relay prints `ready`; rejects with its output if it exits first. */
  private ready(): Promise<void> {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (this.output.includes('ready\n')) resolve();
      };
      this.child.stdout!.on('data', check);
      this.child.once('exit', (code) => reject(new Error(`the network namespace's relay exited (${code}):\n${this.output}`)));
    });
  }

  /** The command line that runs `argv` inside this namespace (in this mount namespace). */
  enter(argv: string[]): string[] {
    return ['nsenter', `--net=/proc/${this.child.pid}/ns/net`, '--', ...argv];
  }

  /** GETs a path on the agent's port inside. */
  get(urlPath: string): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
      http.get({ socketPath: this.agentSocket, path: urlPath }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      }).on('error', reject);
    });
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const exited = new Promise((r) => this.child.once('exit', r));
      this.child.kill('SIGTERM');
      await exited;
    }
    await this.toApiServer.close();
  }
}
