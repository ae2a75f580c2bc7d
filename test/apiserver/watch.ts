/**
 * The watch hub: streams changes as the real server does — one JSON event per
 * line (`{"type":"ADDED","object":{...}}`), starting from a resourceVersion out of
 * the bounded history, with selector transitions turned into ADDED/DELETED,
 * BOOKMARK events when asked for, and a 410 `Expired` ERROR event when the
 * history no longer reaches back to the requested resourceVersion.
 */
import { ServerResponse } from 'node:http';
import { ResourceType, groupVersion } from './resources';
import { Predicate } from './selectors';
import { gone } from './status';
import { Change, Entry, Store } from './store';

export interface WatchRequest {
  readonly resource: ResourceType;
  readonly namespace?: string;
  readonly matches: Predicate;
  readonly resourceVersion?: string;
  readonly allowBookmarks: boolean;
  readonly sendInitialEvents?: boolean;
  readonly timeoutSeconds?: number;
  /** Renders an object for the wire (JSON text); defaults to the object itself. */
  readonly render?: (e: Entry) => string;
  /** Called with each chunk's size in bytes (for counters). */
  readonly onBytes?: (n: number) => void;
}

export interface WatchHubOptions {
  /** How often a watch that allows bookmarks gets one. @default 1000 */
  readonly bookmarkIntervalMs?: number;
}

export class WatchHub {
  private readonly open = new Set<ServerResponse>();
  private readonly bookmarkIntervalMs: number;

  constructor(private readonly store: Store, options: WatchHubOptions = {}) {
    this.bookmarkIntervalMs = options.bookmarkIntervalMs ?? 1000;
  }

  /** How many watches are open now. */
  get size(): number {
    return this.open.size;
  }

  /** Ends every open watch cleanly, as the server does when a watch times out or it shuts down. */
  closeAll(): void {
    for (const res of [...this.open]) res.end();
    this.open.clear();
  }

  serve(req: WatchRequest, res: ServerResponse): void {
    const r = req.resource;
    const render = req.render ?? ((e: Entry) => e.json);
    const send = (type: string, json: string) => {
      // Ended (closeAll, a timeout) but not yet closed: its listener is still subscribed until 'close'.
      if (res.writableEnded || res.destroyed) return;
      const line = `{"type":"${type}","object":${json}}\n`;
      req.onBytes?.(Buffer.byteLength(line));
      res.write(line);
    };
    const bookmark = (annotations?: Record<string, string>) => send('BOOKMARK', JSON.stringify({
      kind: r.kind,
      apiVersion: groupVersion(r),
      metadata: { resourceVersion: String(this.store.resourceVersion), ...(annotations ? { annotations } : {}) },
    }));
    const inScope = (e: Entry) => !req.namespace || e.obj.metadata.namespace === req.namespace;
    const match = (e: Entry | undefined) => e !== undefined && inScope(e) && req.matches(e.obj);

    res.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'no-cache, private', 'Transfer-Encoding': 'chunked' });
    // Clients wait for the headers before they consider the watch open.
    res.flushHeaders();

    const rv = req.resourceVersion;
    let backlog: Change[] = [];
    if (!rv || rv === '0' || req.sendInitialEvents) {
      for (const e of this.store.list(r, req.namespace)) if (req.matches(e.obj)) send('ADDED', render(e));
      if (req.sendInitialEvents && req.allowBookmarks) bookmark({ 'k8s.io/initial-events-end': 'true' });
    } else {
      const since = this.store.changesSince(Number(rv));
      if (!since) {
        const err = gone(`too old resource version: ${rv} (${this.store.oldestWatchable + 1})`);
        send('ERROR', JSON.stringify(err.toStatus()));
        res.end();
        return;
      }
      backlog = since;
    }

    const onChange = (c: Change) => {
      if (c.resource !== r) return;
      const now = c.type !== 'DELETED' && match(c.entry);
      const before = match(c.prev);
      if (c.type === 'DELETED') {
        if (before) send('DELETED', render(c.entry));
      } else if (now && before) {
        send('MODIFIED', render(c.entry));
      } else if (now) {
        send('ADDED', render(c.entry));
      } else if (before) {
        send('DELETED', render(c.entry));
      }
    };
    for (const c of backlog) onChange(c);
    const unsubscribe = this.store.subscribe(onChange);
    this.open.add(res);

    const timers: NodeJS.Timeout[] = [];
    if (req.allowBookmarks) timers.push(setInterval(() => bookmark(), this.bookmarkIntervalMs));
    if (req.timeoutSeconds !== undefined && req.timeoutSeconds > 0) {
      timers.push(setTimeout(() => {
        if (req.allowBookmarks) bookmark();
        res.end();
      }, req.timeoutSeconds * 1000));
    }
    res.on('close', () => {
      unsubscribe();
      this.open.delete(res);
      for (const t of timers) clearTimeout(t);
    });
  }
}
