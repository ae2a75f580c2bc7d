/** PV naming and PV object building: pure functions, no API calls. */
export * from './device-pv';
export * from './device-pv-name';
export * from './device-spec-annotations';
export * from './directory-pv';
export * from './directory-pv-name';
export * from './fnv1a';
export * from './node-affinity';
export * from './node-info';
export * from './node-owner-reference';
export * from './provisioner-name';
export * from './storage-class-fields';
export * from './pool-pv';
