/**
 * Standalone test API server:
 *   npm run test-apiserver -- --kubeconfig FILE [--port N] [--rbac] [--tls] [--user NAME]
 * Listens on 127.0.0.1 in the foreground, writes a kubeconfig for the admin user
 * (or NAME) to FILE, and prints the URL. Ctrl-C stops it. `--rbac` implies
 * `--tls`, because kubectl sends its credentials only over TLS.
 */
import { parseArgs } from 'node:util';
import { startTestApiServer } from './index';

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      kubeconfig: { type: 'string' },
      port: { type: 'string' },
      rbac: { type: 'boolean', default: false },
      tls: { type: 'boolean', default: false },
      user: { type: 'string' },
    },
  });
  if (!values.kubeconfig) {
    process.stderr.write('usage: test-apiserver --kubeconfig FILE [--port N] [--rbac] [--tls] [--user NAME]\n');
    process.exit(2);
  }
  const port = values.port === undefined ? 0 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    process.stderr.write(`--port: "${values.port}" is not a port number\n`);
    process.exit(2);
  }
  const server = await startTestApiServer({ port, rbac: values.rbac, tls: values.tls || values.rbac });
  server.writeKubeconfig(values.kubeconfig, values.user);
  process.stdout.write(`${server.url}\n`);
  const shutdown = () => {
    void server.stop().then(() => process.exit(0));
  };
  process.on('SIGINT', shutdown);
  process.on('SIGTERM', shutdown);
}

main().catch((e) => {
  process.stderr.write(`test-apiserver: ${e?.message ?? e}\n`);
  process.exit(1);
});
