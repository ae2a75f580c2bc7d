/**
 * Clients of the agent's gRPC services as kubelet's (Go) clients are generated: from the
 * same fetched protos (@grpc/grpc-js), over the unix socket the agent serves.
 */
import { credentials, type Client, type ServiceError } from '@grpc/grpc-js';
import { loadPackages } from '../../src/runtime/csi/protos';

type Call = (request: object, callback: (e: ServiceError | null, response: Record<string, unknown>) => void) => void;
export type Stub = Client & Record<string, Call>;

/** A client of each service the protos define, at `socketPath`. */
export function csiClients(socketPath: string): { identity: Stub; node: Stub; registration: Stub } {
  const loaded = loadPackages() as any;
  const target = `unix://${socketPath}`;
  return {
    identity: new loaded.csi.v1.Identity(target, credentials.createInsecure()),
    node: new loaded.csi.v1.Node(target, credentials.createInsecure()),
    registration: new loaded.pluginregistration.Registration(target, credentials.createInsecure()),
  };
}

/** One unary call; rejects with the ServiceError (its `code` is the gRPC status). */
export function call(stub: Stub, method: string, request: object = {}): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    stub[method].call(stub, request, (e, response) => (e ? reject(e) : resolve(response)));
  });
}
