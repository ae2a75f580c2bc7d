/** Volume inspection: what an entry is, how big it is, whether it holds data, what its root directory's metadata is. */
export * from './block-device-io';
export * from './block-device-size';
export * from './capacity';
export * from './device-number';
export * from './entry-kind';
export * from './directory-handle';
export * from './filesystem-size';
export * from './identity';
export * from './partition-table';
export * from './root-metadata';
export * from './volume-contents';
export * from './signature';
export * from './signature-probe';
export * from './wipefs';
