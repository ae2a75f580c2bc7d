/**
 * A self-signed serving certificate for 127.0.0.1, made once per process with the
 * openssl CLI. TLS matters because client-go (kubectl) sends credentials only
 * over TLS: without it every kubectl request is anonymous.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface ServingCertificate {
  readonly key: string;
  readonly cert: string;
}

let cached: ServingCertificate | undefined;

export function servingCertificate(): ServingCertificate {
  if (cached) return cached;
  const dir = mkdtempSync(join(tmpdir(), 'test-apiserver-tls-'));
  try {
    execFileSync('openssl', [
      'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
      '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-days', '2',
      '-subj', '/CN=test-apiserver', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost',
    ], { stdio: ['ignore', 'ignore', 'pipe'] });
    cached = { key: readFileSync(join(dir, 'key.pem'), 'utf8'), cert: readFileSync(join(dir, 'cert.pem'), 'utf8') };
    return cached;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
