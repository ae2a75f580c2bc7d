/**
 * Listen addresses in Go's `host:port` form, as the Go provisioners' `--listen-address`
 * and `--metrics-addr` flags take them: `:8080` (every interface), `127.0.0.1:0`
 * (loopback, any free port), `[::]:8080`, `localhost:9090`.
 */
export interface ListenAddress {
  /** Host to bind; undefined means every interface (Node binds `::`, dual-stack). */
  readonly host: string | undefined;
  /** 0 asks the kernel for a free port. */
  readonly port: number;
}

/** Parses a Go-style `host:port`; throws an Error whose message names the address and what is wrong. */
export function parseListenAddress(address: string): ListenAddress {
  const fail = (why: string): never => {
    throw new Error(`invalid listen address "${address}": ${why} (expected host:port, e.g. ":8080", "127.0.0.1:8080" or "[::1]:8080")`);
  };
  let host: string;
  let port: string;
  if (address.startsWith('[')) {
    const close = address.indexOf(']');
    if (close < 0) fail('missing "]" after the IPv6 address');
    if (address[close + 1] !== ':') fail('missing port after "]"');
    host = address.slice(1, close);
    port = address.slice(close + 2);
    if (host === '') fail('empty IPv6 address in brackets');
  } else {
    const colon = address.lastIndexOf(':');
    if (colon < 0) fail('missing port');
    host = address.slice(0, colon);
    port = address.slice(colon + 1);
    if (host.includes(':')) fail('too many colons; write an IPv6 address in brackets');
  }
  if (!/^\d{1,5}$/.test(port) || Number(port) > 65535) fail(`port "${port}" is not a number from 0 to 65535`);
  return { host: host === '' ? undefined : host, port: Number(port) };
}
