/**
 * kubelet's plugin registration, served by the agent itself (no node-driver-registrar
 * sidecar): kubelet finds the socket in its plugins_registry directory, asks what the
 * plugin is and where its CSI endpoint is, then says whether it took it.
 */
import type { sendUnaryData, ServerUnaryCall, UntypedServiceImplementation } from '@grpc/grpc-js';

/** The CSI versions the agent speaks, as kubelet asks them. */
export const SUPPORTED_CSI_VERSIONS = ['1.0.0'];

export interface RegistrationOptions {
  readonly driverName: string;
  /** The CSI socket's path as kubelet reaches it (on the node). */
  readonly endpoint: string;
  /** What kubelet said of the registration: taken, or refused with its error. */
  readonly onStatus: (registered: boolean, error: string) => void;
}

interface RegistrationStatus {
  plugin_registered: boolean;
  error: string;
}

export function registrationService(options: RegistrationOptions): UntypedServiceImplementation {
  return {
    GetInfo: (_: ServerUnaryCall<unknown, unknown>, callback: sendUnaryData<unknown>) => callback(null, {
      type: 'CSIPlugin',
      name: options.driverName,
      endpoint: options.endpoint,
      supported_versions: SUPPORTED_CSI_VERSIONS,
    }),
    NotifyRegistrationStatus: (call: ServerUnaryCall<RegistrationStatus, unknown>, callback: sendUnaryData<unknown>) => {
      options.onStatus(call.request.plugin_registered, call.request.error);
      callback(null, {});
    },
  };
}
