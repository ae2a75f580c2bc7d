/**
 * The gRPC services the agent serves kubelet, loaded at start from the protos that
 * scripts/protos.sh fetches from the Go module proxy (the CSI spec's csi.proto and
 * kubelet's plugin registration API), not generated into code: what goes on the wire
 * is what the spec's own file says, field names as written (keepCase).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { type GrpcObject, loadPackageDefinition, type ServiceDefinition } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';

/**
 * protos/ at the repository's root, and /app/protos in the image: three levels above this
 * file (src/runtime/csi, lib/runtime/csi) and above the bundled agent (/app/lib/runtime/cli).
 */
export const PROTOS_DIRECTORY = path.resolve(__dirname, '..', '..', '..', 'protos');

export interface Protos {
  readonly identity: ServiceDefinition;
  readonly node: ServiceDefinition;
  readonly registration: ServiceDefinition;
}

interface Loaded {
  csi: { v1: { Identity: { service: ServiceDefinition }; Node: { service: ServiceDefinition } } };
  pluginregistration: { Registration: { service: ServiceDefinition } };
}

/**
 * Both protos' packages (services as client constructors too) from `directory`; throws, naming
 * what is missing and how it is made, when they are not there.
 */
export function loadPackages(directory = PROTOS_DIRECTORY): GrpcObject {
  const files = [path.join(directory, 'csi', 'csi.proto'), path.join(directory, 'pluginregistration', 'api.proto')];
  const missing = files.filter((f) => !fs.existsSync(f));
  if (missing.length > 0) {
    throw new Error(`the CSI protos are missing (${missing.join(', ')}): scripts/protos.sh fetches them (the image has them at /app/protos)`);
  }
  // Enums as their names and 64-bit integers as strings, as the spec's JSON mapping writes them; unset fields as their defaults.
  return loadPackageDefinition(loadSync(files, { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true }));
}

/** The services the agent serves, from the protos in `directory`. */
export function loadProtos(directory = PROTOS_DIRECTORY): Protos {
  const loaded = loadPackages(directory) as unknown as Loaded;
  return {
    identity: loaded.csi.v1.Identity.service,
    node: loaded.csi.v1.Node.service,
    registration: loaded.pluginregistration.Registration.service,
  };
}
