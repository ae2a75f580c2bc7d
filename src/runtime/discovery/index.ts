/** Discovery: the mount table, what each entry of a discovery directory is, device walks, and what to provision. */
export * from './device-discovery';
export * from './device-walk';
export * from './directory-discovery';
export * from './directory-stamp';
export * from './entry-classification';
export * from './mount-point-memo';
export * from './mount-table';
export * from './provisioning-plan';
