/**
 * Authentication: bearer tokens issued by the test server, each naming one user.
 * Service account users (`system:serviceaccount:<ns>:<name>`) get the groups the
 * real token authenticator gives them; the default user is a cluster admin
 * (`system:masters`). Impersonation headers work as for `kubectl --as`.
 */
import { randomBytes } from 'node:crypto';
import { IncomingMessage } from 'node:http';
import { ApiError } from './status';

export interface UserInfo {
  readonly username: string;
  readonly groups: readonly string[];
}

/** The user `kubeConfig()` connects as when none is named. */
export const ADMIN = 'admin';

export const ANONYMOUS: UserInfo = { username: 'system:anonymous', groups: ['system:unauthenticated'] };

/** The groups the real authenticators give this user name. */
export function userInfo(username: string, extraGroups: readonly string[] = []): UserInfo {
  const groups = new Set<string>(extraGroups);
  const sa = /^system:serviceaccount:([^:]+):([^:]+)$/.exec(username);
  if (sa) {
    groups.add('system:serviceaccounts');
    groups.add(`system:serviceaccounts:${sa[1]}`);
  }
  if (username === ADMIN) groups.add('system:masters');
  groups.add('system:authenticated');
  return { username, groups: [...groups] };
}

export class Authenticator {
  private readonly byToken = new Map<string, UserInfo>();
  private readonly byUser = new Map<string, string>();

  /** The bearer token for this user, issued on first use. */
  tokenFor(username: string): string {
    let token = this.byUser.get(username);
    if (!token) {
      token = randomBytes(24).toString('base64url');
      this.byUser.set(username, token);
      this.byToken.set(token, userInfo(username));
    }
    return token;
  }

  /** The requesting user; 401 for an unknown token. */
  authenticate(req: IncomingMessage): UserInfo {
    const header = req.headers.authorization;
    let user = ANONYMOUS;
    if (header) {
      const m = /^Bearer\s+(\S+)$/i.exec(header);
      const found = m ? this.byToken.get(m[1]) : undefined;
      if (!found) throw new ApiError(401, 'Unauthorized', 'Unauthorized');
      user = found;
    }
    const as = req.headers['impersonate-user'];
    if (typeof as === 'string' && as) {
      if (!user.groups.includes('system:masters')) {
        throw new ApiError(403, 'Forbidden', `users "${as}" is forbidden: User "${user.username}" cannot impersonate resource "users" in API group "" at the cluster scope`);
      }
      const extra = req.headers['impersonate-group'];
      return userInfo(as, extra === undefined ? [] : Array.isArray(extra) ? extra : [extra]);
    }
    return user;
  }
}
