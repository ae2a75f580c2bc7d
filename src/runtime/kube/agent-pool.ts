import { createHash } from 'node:crypto';
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';

/** TLS material and checks that make two agents interchangeable. */
const IDENTITY_OPTIONS = ['ca', 'cert', 'key', 'pfx', 'passphrase', 'rejectUnauthorized', 'servername'] as const;

/** Agents kept at once; more only appear when credentials rotate. */
const MAX_AGENTS = 4;

/**
 * client-node 1.4 builds a new http(s).Agent for every request, so every request opens
 * a new connection (and, over TLS, does a new handshake). This pool swaps each fresh
 * agent for a keep-alive one with the same TLS material, so requests share connections.
 * Proxy agents and anything unfamiliar are passed through untouched.
 */
export class AgentPool {
  private readonly agents = new Map<string, HttpAgent>();

  reuse(fresh: HttpAgent | undefined): HttpAgent | undefined {
    if (!fresh || (fresh.constructor !== HttpAgent && fresh.constructor !== HttpsAgent)) return fresh;
    const options = (fresh as HttpAgent & { options: Record<string, unknown> }).options ?? {};
    const key = fingerprint(fresh instanceof HttpsAgent, options);
    let agent = this.agents.get(key);
    if (!agent) {
      const Ctor = fresh.constructor as typeof HttpAgent;
      agent = new Ctor({ ...options, keepAlive: true });
      this.agents.set(key, agent);
      if (this.agents.size > MAX_AGENTS) {
        const [oldestKey, oldest] = this.agents.entries().next().value as [string, HttpAgent];
        this.agents.delete(oldestKey);
        oldest.destroy();
      }
    }
    return agent;
  }

  /** Closes every kept connection (shutdown). */
  destroy(): void {
    for (const agent of this.agents.values()) agent.destroy();
    this.agents.clear();
  }
}

function fingerprint(tls: boolean, options: Record<string, unknown>): string {
  const hash = createHash('sha256').update(tls ? 'https' : 'http');
  for (const name of IDENTITY_OPTIONS) {
    const value = options[name];
    hash.update(`\u0000${name}=`);
    if (value === undefined) continue;
    for (const part of Array.isArray(value) ? value : [value]) hash.update(Buffer.isBuffer(part) ? part : String(part));
  }
  return hash.digest('hex');
}
