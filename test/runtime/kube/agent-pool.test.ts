import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { AgentPool } from '../../../src/runtime/kube/agent-pool';

describe('AgentPool', () => {
  const pool = new AgentPool();
  afterAll(() => pool.destroy());

  test('fresh agents with the same TLS material become one keep-alive agent', () => {
    const a = pool.reuse(new HttpsAgent({ ca: 'CA-1', rejectUnauthorized: true }));
    const b = pool.reuse(new HttpsAgent({ ca: 'CA-1', rejectUnauthorized: true }));
    expect(a).toBe(b);
    expect(a).toBeInstanceOf(HttpsAgent);
    expect((a as HttpAgent & { keepAlive: boolean }).keepAlive).toBe(true);
    expect((a as HttpAgent & { options: { ca: string } }).options.ca).toBe('CA-1');
  });

  test('other TLS material gets another agent', () => {
    expect(pool.reuse(new HttpsAgent({ ca: 'CA-1' }))).not.toBe(pool.reuse(new HttpsAgent({ ca: 'CA-2' })));
  });

  test('plain HTTP and HTTPS agents are kept apart', () => {
    expect(pool.reuse(new HttpAgent())).toBeInstanceOf(HttpAgent);
    expect(pool.reuse(new HttpAgent())).not.toBeInstanceOf(HttpsAgent);
  });

  test('agents of other kinds (proxies) pass through untouched', () => {
    class ProxyAgent extends HttpAgent {}
    const proxy = new ProxyAgent();
    expect(pool.reuse(proxy)).toBe(proxy);
    expect(pool.reuse(undefined)).toBeUndefined();
  });
});
