/** A bare HTTP client for tests that check the wire: status codes, bodies and headers exactly as sent. */
import { TestApiServer } from './index';

export interface RawResponse {
  readonly status: number;
  readonly headers: Headers;
  readonly body: any;
  readonly text: string;
}

export interface CallOptions {
  readonly user?: string;
  readonly contentType?: string;
}

export async function call(server: TestApiServer, method: string, path: string, body?: unknown, options: CallOptions = {}): Promise<RawResponse> {
  const headers: Record<string, string> = { Authorization: `Bearer ${server.tokenFor(options.user ?? 'admin')}` };
  if (body !== undefined) headers['Content-Type'] = options.contentType ?? 'application/json';
  const res = await fetch(`${server.url}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  let parsed: any;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, body: parsed, text };
}

/** Reads watch events (one JSON object per line) until `stop` says enough or the stream ends. */
export async function watchEvents(server: TestApiServer, path: string, stop: (events: any[]) => boolean, user = 'admin'): Promise<{ status: number; events: any[] }> {
  const controller = new AbortController();
  const res = await fetch(`${server.url}${path}`, { headers: { Authorization: `Bearer ${server.tokenFor(user)}` }, signal: controller.signal });
  const events: any[] = [];
  if (res.status !== 200 || !res.body) return { status: res.status, events: [await res.json()] };
  const decoder = new TextDecoder();
  let buffered = '';
  try {
    for await (const chunk of res.body as any) {
      buffered += decoder.decode(chunk, { stream: true });
      let nl: number;
      while ((nl = buffered.indexOf('\n')) >= 0) {
        events.push(JSON.parse(buffered.slice(0, nl)));
        buffered = buffered.slice(nl + 1);
      }
      if (stop(events)) break;
    }
  } finally {
    controller.abort();
  }
  return { status: res.status, events };
}

export const localPv = (name: string, labels: Record<string, string> = {}) => ({
  apiVersion: 'v1',
  kind: 'PersistentVolume',
  metadata: { name, labels },
  spec: {
    capacity: { storage: '1Gi' },
    accessModes: ['ReadWriteOnce'],
    local: { path: `/mnt/${name}` },
    nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: ['n1'] }] }] } },
  },
});

/** Waits (polling) until `cond` holds. */
export async function eventually(cond: () => boolean, what: string, ms = 3000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
