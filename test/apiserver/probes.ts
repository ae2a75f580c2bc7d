/**
 * Probes and lifecycle hooks as the core validation checks them
 * (validateProbe, validateHandler, ValidatePortNumOrName): exactly one handler,
 * ports by number (1-65535) or IANA service name, non-negative timings.
 * A named port is checked for syntax only: the real server does not require
 * it to be one of the container's ports (the kubelet finds out at run time).
 */
import { forbiddenField, invalidValue, nonNegativeProblems, required, unsupported } from './causes';
import { StatusCause } from './status';

const HANDLERS = ['exec', 'httpGet', 'tcpSocket', 'grpc', 'sleep'] as const;
const HEADER_NAME = /^[-A-Za-z0-9]+$/;
const HEADER_NAME_MSG = "a valid HTTP header must consist of alphanumeric characters or '-' (e.g. 'X-Header-Name', regex used for validation is '[-A-Za-z0-9]+')";

/** IsValidPortNum's message. */
export const PORT_RANGE = 'must be between 1 and 65535, inclusive';

/** IsValidPortName's messages (an IANA_SVC_NAME). */
export function portNameMessages(name: string): string[] {
  const out: string[] = [];
  if (name.length > 15) out.push('must be no more than 15 characters');
  if (!/^[-a-z0-9]+$/.test(name)) out.push('must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)');
  if (!/[a-z]/.test(name)) out.push('must contain at least one letter (a-z)');
  if (name.includes('--')) out.push('must not contain consecutive hyphens');
  if (name.startsWith('-') || name.endsWith('-')) out.push('must not begin or end with a hyphen');
  return out;
}

const validPort = (n: number) => Number.isInteger(n) && n >= 1 && n <= 65535;

/** ValidatePortNumOrName: an IntOrString port. */
function portNumOrNameProblems(field: string, port: unknown): StatusCause[] {
  if (typeof port === 'number') return validPort(port) ? [] : [invalidValue(field, port, PORT_RANGE)];
  return portNameMessages(String(port ?? '')).map((msg) => invalidValue(field, String(port ?? ''), msg));
}

function handlerProblems(field: string, handler: any, gracePeriod: number | undefined): StatusCause[] {
  const present = HANDLERS.filter((h) => handler?.[h] !== undefined && handler?.[h] !== null);
  if (present.length === 0) return [required(field, 'must specify a handler type')];
  const [kind] = present;
  const f = `${field}.${kind}`;
  const h = handler[kind];
  const out = present.slice(1).map((extra) => forbiddenField(`${field}.${extra}`, 'may not specify more than 1 handler type'));
  switch (kind) {
    case 'exec':
      if (!h.command?.length) out.push(required(`${f}.command`));
      break;
    case 'httpGet':
      if (!h.path) out.push(required(`${f}.path`));
      out.push(...portNumOrNameProblems(`${f}.port`, h.port));
      if (h.scheme !== 'HTTP' && h.scheme !== 'HTTPS') out.push(unsupported(`${f}.scheme`, h.scheme ?? '', ['HTTP', 'HTTPS']));
      for (const header of h.httpHeaders ?? []) {
        if (!HEADER_NAME.test(header?.name ?? '')) out.push(invalidValue(`${f}.httpHeaders`, header?.name ?? '', HEADER_NAME_MSG));
      }
      break;
    case 'tcpSocket':
      out.push(...portNumOrNameProblems(`${f}.port`, h.port));
      break;
    case 'grpc':
      if (!validPort(h.port)) out.push(invalidValue(`${f}.port`, h.port ?? 0, PORT_RANGE));
      break;
    case 'sleep':
      if (gracePeriod !== undefined && (typeof h.seconds !== 'number' || h.seconds < 0 || h.seconds > gracePeriod)) {
        out.push(invalidValue(f, h.seconds ?? 0, `must be non-negative and less than terminationGracePeriodSeconds (${gracePeriod})`));
      }
      break;
  }
  return out;
}

/** The probe handlers: a probe has no sleep action. */
const probeHandler = (p: any) => ({ exec: p.exec, httpGet: p.httpGet, tcpSocket: p.tcpSocket, grpc: p.grpc });

/** validateLivenessProbe / validateReadinessProbe / validateStartupProbe. */
export function probeProblems(field: string, kind: 'livenessProbe' | 'readinessProbe' | 'startupProbe', probe: any, gracePeriod?: number): StatusCause[] {
  if (!probe) return [];
  const out = handlerProblems(field, probeHandler(probe), gracePeriod);
  for (const t of ['initialDelaySeconds', 'timeoutSeconds', 'periodSeconds', 'successThreshold', 'failureThreshold']) {
    out.push(...nonNegativeProblems(`${field}.${t}`, probe[t]));
  }
  const tgps = probe.terminationGracePeriodSeconds;
  if (typeof tgps === 'number' && tgps <= 0) out.push(invalidValue(`${field}.terminationGracePeriodSeconds`, tgps, 'must be greater than 0'));
  if (kind !== 'readinessProbe' && probe.successThreshold !== 1) out.push(invalidValue(`${field}.successThreshold`, probe.successThreshold ?? 0, 'must be 1'));
  if (kind === 'readinessProbe' && tgps !== undefined && tgps !== null) {
    out.push(invalidValue(`${field}.terminationGracePeriodSeconds`, tgps, 'must not be set for readinessProbes'));
  }
  return out;
}

/** validateLifecycle: postStart and preStop handlers (which may sleep). */
export function lifecycleProblems(field: string, lifecycle: any, gracePeriod?: number): StatusCause[] {
  const lifecycleHandler = (h: any) => ({ exec: h.exec, httpGet: h.httpGet, tcpSocket: h.tcpSocket, sleep: h.sleep });
  return (['postStart', 'preStop'] as const)
    .filter((hook) => lifecycle?.[hook])
    .flatMap((hook) => handlerProblems(`${field}.${hook}`, lifecycleHandler(lifecycle[hook]), gracePeriod));
}
