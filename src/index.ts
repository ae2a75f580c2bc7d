/** The package's main entry: the construct and the configuration model it shares with the runtime. */
export * from './config';
export * from './constructs';
// The construct's enums carry the model's closed sets under the same names; its values are the model's strings.
export { AccessMode, DeviceFsType, DeviceWipe, PoolBackend, ProjectQuotaTenants, ReclaimPolicy, VolumeMode } from './constructs';
