import { CoreV1Api, KubeConfig, V1PersistentVolume } from '@kubernetes/client-node';
import { KubeApi } from '../../../src/runtime/kube/api-client';
import { KubeRequesterOptions } from '../../../src/runtime/kube/request';
import { NODE_LABEL, PROVISIONED_BY_ANNOTATION } from '../../../src/runtime/well-known';
import { ControlPlaneOptions } from '../../support/control-plane';
import { Kubernetes } from '../../support/kubernetes';

/** The suite's control plane (reset() after each test that changes it), and a KubeApi on it (through its fault proxy) with quick retries. */
export async function serverAndApi(options: KubeRequesterOptions = {},
  cluster: ControlPlaneOptions = {}): Promise<{ server: Kubernetes; api: KubeApi }> {
  const server = await Kubernetes.forSuite(cluster);
  const api = new KubeApi(server.kubeConfig(), { backoff: { initialMs: 5, maxMs: 50 }, ...options });
  return { server, api };
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
export async function eventually(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
