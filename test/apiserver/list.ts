/**
 * List semantics: resourceVersion and resourceVersionMatch, consistent reads at
 * an older resourceVersion, limit and continue tokens (as the real server
 * encodes them), remainingItemCount, and the label/field selector filter.
 */
import { ResourceType } from './resources';
import { parseFieldSelector, parseLabelSelector, pinnedName } from './selectors';
import { ApiError, badRequest, gone } from './status';
import { Entry, Store } from './store';

/** The continue token the real server issues (base64 JSON of version, rv and start key). */
function encodeContinue(rv: number, startKey: string): string {
  return Buffer.from(JSON.stringify({ v: 'meta.k8s.io/v1', rv, start: `${startKey}\u0000` })).toString('base64');
}

function decodeContinue(token: string): { rv: number; start: string } {
  try {
    const t = JSON.parse(Buffer.from(token, 'base64').toString('utf8'));
    if (t.v !== 'meta.k8s.io/v1' || typeof t.rv !== 'number' || typeof t.start !== 'string') throw new Error();
    return { rv: t.rv, start: t.start };
  } catch {
    throw badRequest('continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)');
  }
}

const EXPIRED_CONTINUE = 'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.';

/** The filter a request's labelSelector and fieldSelector describe (400 when unparsable). */
export function selectorFilter(r: ResourceType, q: URLSearchParams): (o: any) => boolean {
  const labels = parseLabelSelector(q.get('labelSelector') ?? undefined);
  const fields = parseFieldSelector(q.get('fieldSelector') ?? undefined, r);
  return (o) => labels(o) && fields(o);
}

export interface ListPage {
  readonly items: Entry[];
  /** ListMeta: resourceVersion, continue, remainingItemCount. */
  readonly meta: Record<string, unknown>;
}

/** One page of a list request, or the error the real server answers with. */
export function listPage(store: Store, r: ResourceType, namespace: string | undefined, q: URLSearchParams): ListPage {
  const matches = selectorFilter(r, q);
  const rv = q.get('resourceVersion') ?? '';
  const rvMatch = q.get('resourceVersionMatch') ?? '';
  const cont = q.get('continue') ?? '';
  const limit = Number(q.get('limit') ?? '0') || 0;
  if (rvMatch && !rv) throw badRequest('resourceVersionMatch is forbidden unless resourceVersion is provided');
  if (rvMatch && !['Exact', 'NotOlderThan'].includes(rvMatch)) {
    throw badRequest(`resourceVersionMatch: Unsupported value: "${rvMatch}": supported values: "Exact", "NotOlderThan"`);
  }
  if (cont && rv && rv !== '0') throw badRequest('specifying resource version is not allowed when using continue');
  if (rvMatch === 'Exact' && rv === '0') throw badRequest('resourceVersionMatch "exact" is forbidden for resourceVersion "0"');
  if (rv && !/^\d+$/.test(rv)) throw badRequest(`resourceVersion: Invalid value: "${rv}": must be a non-negative integer`);

  let atRv = store.resourceVersion;
  let start = '';
  let entries: Entry[] | undefined;
  if (cont) {
    const t = decodeContinue(cont);
    atRv = t.rv;
    start = t.start;
    entries = store.listAt(r, atRv, namespace);
    if (!entries) throw gone(EXPIRED_CONTINUE);
  } else if (rvMatch === 'Exact') {
    atRv = Number(rv);
    entries = store.listAt(r, atRv, namespace);
    if (!entries) throw gone('The resourceVersion for the provided list is too old.');
  } else {
    if (rv && rv !== '0' && Number(rv) > store.resourceVersion) {
      throw new ApiError(504, 'Timeout', `Too large resource version: ${rv}, current: ${store.resourceVersion}`,
        { causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }], retryAfterSeconds: 1 });
    }
    const pinned = pinnedName(q.get('fieldSelector') ?? undefined);
    if (pinned !== undefined && (!r.namespaced || namespace)) {
      const one = store.get(r, namespace, pinned);
      entries = one ? [one] : [];
    } else {
      entries = store.list(r, namespace);
    }
  }

  let i = 0;
  if (start) {
    let lo = 0;
    let hi = entries.length;
    while (lo < hi) {
      const mid = Math.floor((lo + hi) / 2);
      if (entries[mid].key < start) lo = mid + 1;
      else hi = mid;
    }
    i = lo;
  }
  const picked: Entry[] = [];
  for (; i < entries.length && (!limit || picked.length < limit); i++) {
    if (matches(entries[i].obj)) picked.push(entries[i]);
  }
  const meta: Record<string, unknown> = { resourceVersion: String(atRv) };
  if (limit && i < entries.length) {
    meta.continue = encodeContinue(atRv, picked[picked.length - 1]?.key ?? entries[i - 1].key);
    if (!q.get('labelSelector') && !q.get('fieldSelector')) meta.remainingItemCount = entries.length - i;
  }
  return { items: picked, meta };
}
