/**
 * What every long-running subcommand shares: logger, metrics, health, the HTTP
 * endpoints, the API client with its rate limit and metrics hook, and the
 * runners that own the command's long-running parts, stopped in reverse on
 * SIGTERM (the kubelet's stop) or SIGINT.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { KubeApi } from '../kube/api-client';
import { HttpTransport } from '../kube/http-transport';
import { loadKubeConfig } from '../kube/kubeconfig';
import { createLogger, Health, isLogLevel, Logger, ProvisionerMetrics, RunningHttpServer, startHttpServer } from '../observability';
import { Runners } from './runners';

export interface Agent {
  readonly logger: Logger;
  readonly metrics: ProvisionerMetrics;
  readonly health: Health;
  readonly api: KubeApi;
  /**
   * A second client for Events, with its own rate limit (as client-go's event
   * broadcaster has): a burst of Events never delays the PV work.
   */
  readonly eventsApi: KubeApi;
  readonly http: RunningHttpServer;
  /**
   * The command's long-running parts. The agent's own (the HTTP endpoints and the
   * API connections) are the first, so they are the last to stop.
   */
  readonly runners: Runners;
  /** Waits for a stop signal, then stops every runner, the last started first. */
  runUntilStopped(): Promise<void>;
}

/** What every long-running command takes: the API client, its rate limit, and logging. */
export interface CommonOptions {
  /** A kubeconfig file; in-cluster configuration when unset. */
  readonly kubeconfig?: string;
  /** With a kubeconfig, the API server URL to use in place of its cluster's (node-cleanup's --kube-api-endpoint). */
  readonly kubeApiEndpoint?: string;
  readonly qps: number;
  readonly burst: number;
  readonly logLevel: string;
  readonly logFormat: 'json' | 'text';
}

export interface AgentOptions extends CommonOptions {
  readonly listenAddress: string;
  readonly metricsPath: string;
  /** The loop counts as stuck after this long without a heartbeat. */
  readonly stuckAfterMs: number;
}

/** This package's version, for build_info and logs. */
export function packageVersion(): string {
  try {
    // src/runtime/controller and lib/runtime/controller are both three levels below the package.
    return JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', '..', 'package.json'), 'utf8')).version ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

export async function startAgent(options: AgentOptions): Promise<Agent> {
  const logger = createLogger({ level: isLogLevel(options.logLevel) ? options.logLevel : 'info', format: options.logFormat });
  const metrics = new ProvisionerMetrics({ version: packageVersion() });
  const health = new Health({ stuckAfterMs: options.stuckAfterMs });
  const kubeConfig = loadKubeConfig(options.kubeconfig, options.kubeApiEndpoint);
  // One transport for both clients: over HTTP/2 (where the server offers it) every request
  // and watch of the agent is a stream on one connection, the Events' among them.
  const transport = new HttpTransport(kubeConfig);
  const client = (): KubeApi => new KubeApi(kubeConfig, {
    transport,
    qps: options.qps,
    burst: options.burst,
    onRequest: (r) => metrics.recordApiRequest(r.verb, r.resource, r.durationSeconds, r.failed),
    logger,
  });
  const api = client();
  const eventsApi = client();
  const http = await startHttpServer({ listenAddress: options.listenAddress, metricsPath: options.metricsPath, metrics, health });
  logger.info({ listen: `${http.host}:${http.port}`, version: packageVersion() }, 'serving metrics and health endpoints');
  const stopped = new Promise<string>((resolve) => {
    for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => resolve(signal));
  });
  const runners = new Runners(logger);
  await runners.start('agent endpoints', {
    stop: async () => {
      await http.close();
      api.close();
      eventsApi.close();
    },
  });
  const runUntilStopped = async (): Promise<void> => {
    const signal = await stopped;
    logger.info({ signal }, 'stopping');
    await runners.stop();
  };
  return { logger, metrics, health, api, eventsApi, http, runners, runUntilStopped };
}
