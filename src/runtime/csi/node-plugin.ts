/**
 * The agent as kubelet's CSI node plugin, with no sidecar: the Identity and Node services
 * on `<kubelet>/plugins/<driver>/csi.sock` (a directory the agent makes, 0700: only root
 * on the node reaches it), and its own registration (node-driver-registrar's part) on
 * `<kubelet>/plugins_registry/<driver>-reg.sock`, where kubelet's plugin watcher finds it,
 * asks where the endpoint is, and then asks the Node service who the node is. Stopped,
 * the registration socket goes first (kubelet lets the plugin go), then the endpoint.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { identityService } from './identity-service';
import { nodeService, type NodeServiceOptions } from './node-service';
import { loadProtos } from './protos';
import { registrationService } from './registration-service';
import { SocketServer } from './socket-server';
import type { Runner } from '../lifecycle/runners';
import type { Logger } from '../observability';

export interface NodePluginOptions extends Omit<NodeServiceOptions, 'kubeletDir'> {
  readonly driverName: string;
  readonly version: string;
  /** kubelet's root directory, at the same path as on the node (the DaemonSet mounts it so, with bidirectional propagation). */
  readonly kubeletDir: string;
  /** Whether the agent serves volumes now (its readiness). */
  readonly ready: () => boolean;
  readonly logger: Logger;
}

export class NodePlugin implements Runner {
  /** The plugin's own directory, with its endpoint. */
  readonly pluginDir: string;
  readonly endpoint: string;
  private readonly csi: SocketServer;
  private readonly registration: SocketServer;

  constructor(options: NodePluginOptions) {
    const { driverName, kubeletDir, logger } = options;
    const protos = loadProtos();
    this.pluginDir = path.join(kubeletDir, 'plugins', driverName);
    this.endpoint = path.join(this.pluginDir, 'csi.sock');
    this.csi = new SocketServer(this.endpoint, [
      { definition: protos.identity, implementation: identityService({ driverName, version: options.version, ready: options.ready }) },
      { definition: protos.node, implementation: nodeService(options) },
    ]);
    this.registration = new SocketServer(path.join(kubeletDir, 'plugins_registry', `${driverName}-reg.sock`), [{
      definition: protos.registration,
      implementation: registrationService({
        driverName,
        endpoint: this.endpoint,
        onStatus: (registered, error) => {
          if (registered) logger.info({ driver: driverName }, 'kubelet registered the CSI node plugin');
          else logger.error({ driver: driverName, error }, 'kubelet refused the CSI node plugin');
        },
      }),
    }]);
  }

  async start(): Promise<void> {
    fs.mkdirSync(this.pluginDir, { recursive: true, mode: 0o700 });
    fs.chmodSync(this.pluginDir, 0o700); // made by an earlier agent, or by hand: only root reaches the endpoint
    await this.csi.start();
    await this.registration.start();
  }

  async stop(): Promise<void> {
    await this.registration.stop();
    await this.csi.stop();
  }
}
