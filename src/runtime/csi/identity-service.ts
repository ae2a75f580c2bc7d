/**
 * The CSI Identity service: who the plugin is, what it offers, and whether it is ready
 * (kubelet and the sidecars ask before anything else).
 */
import type { sendUnaryData, ServerUnaryCall, UntypedServiceImplementation } from '@grpc/grpc-js';

export interface IdentityOptions {
  /** The driver's name: the CSIDriver object's and the PVs' `spec.csi.driver`. */
  readonly driverName: string;
  /** The agent's version. */
  readonly version: string;
  /** Whether the agent can serve volumes now (its readiness, as /readyz says it). */
  readonly ready: () => boolean;
}

type Unary = (call: ServerUnaryCall<unknown, unknown>, callback: sendUnaryData<unknown>) => void;

export function identityService(options: IdentityOptions): UntypedServiceImplementation {
  const GetPluginInfo: Unary = (_, callback) => callback(null, { name: options.driverName, vendor_version: options.version, manifest: {} });
  // Its volumes are reachable only from their node; no Controller service (the agent provisions through the API server).
  const GetPluginCapabilities: Unary = (_, callback) => callback(null, {
    capabilities: [{ service: { type: 'VOLUME_ACCESSIBILITY_CONSTRAINTS' } }],
  });
  const Probe: Unary = (_, callback) => callback(null, { ready: { value: options.ready() } });
  return { GetPluginInfo, GetPluginCapabilities, Probe };
}
