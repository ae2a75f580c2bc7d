import { CoreV1Api, KubeConfig, V1PersistentVolume } from '@kubernetes/client-node';
import { KubeApi } from '../../../src/runtime/kube/api-client';
import { KubeRequesterOptions } from '../../../src/runtime/kube/request';
import { NODE_LABEL, PROVISIONED_BY_ANNOTATION } from '../../../src/runtime/well-known';
import { startTestApiServer, TestApiServer } from '../../apiserver';

/** A test API server and a KubeApi on it with quick retries. */
export async function serverAndApi(options: KubeRequesterOptions = {}): Promise<{ server: TestApiServer; api: KubeApi }> {
  const server = await startTestApiServer();
  const api = new KubeApi(server.kubeConfig(), { backoff: { initialMs: 5, maxMs: 50 }, ...options });
  return { server, api };
}

/**
 * The server's KubeConfig, allowed to speak plain HTTP (client-node 1.4 refuses an
 * `http://` server unless the cluster has skipTLSVerify). The test server's own
 * kubeconfig now carries the flag, so this returns it unchanged; kept for callers.
 */
export function plainHttpKubeConfig(server: TestApiServer): KubeConfig {
  const kc = server.kubeConfig();
  if (kc.getCurrentCluster()?.skipTLSVerify || !server.url.startsWith('http:')) return kc;
  const fixed = new KubeConfig();
  fixed.loadFromOptions({
    clusters: kc.clusters.map((c) => ({ ...c, skipTLSVerify: true })),
    users: kc.users,
    contexts: kc.contexts,
    currentContext: kc.currentContext,
  });
  return fixed;
}

/** client-node's CoreV1Api on the same server and credentials as `api`, for test set-up and checks. */
export function coreApiOf(api: KubeApi): CoreV1Api {
  const kc = new KubeConfig();
  kc.loadFromOptions(api.kubeConfig);
  return kc.makeApiClient(CoreV1Api);
}

export interface PvShape {
  readonly node: string;
  readonly path?: string;
  readonly provisioner?: string;
  /** Put our node label on it. @default true */
  readonly labelled?: boolean;
  readonly labels?: Record<string, string>;
}

/** A valid local PV as our provisioner (or the Go one, unlabelled) would create it. */
export function localPv(name: string, shape: PvShape): V1PersistentVolume {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: {
      name,
      labels: { ...(shape.labelled ?? true ? { [NODE_LABEL]: shape.node } : {}), ...shape.labels },
      annotations: { [PROVISIONED_BY_ANNOTATION]: shape.provisioner ?? `local-volume-provisioner-${shape.node}` },
    },
    spec: {
      capacity: { storage: '10Gi' },
      accessModes: ['ReadWriteOnce'],
      persistentVolumeReclaimPolicy: 'Delete',
      storageClassName: 'local',
      volumeMode: 'Filesystem',
      local: { path: shape.path ?? `/mnt/disks/${name}` },
      nodeAffinity: {
        required: {
          nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [shape.node] }] }],
        },
      },
    },
  };
}

/** Polls until `condition` holds (or fails the test after `timeoutMs`). */
export async function eventually(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
