/** Cleanup of Released volumes: decisions, safety checks, cleaners, process table, Jobs. */
export * from './release-decision';
export * from './path-safety';
export * from './nested-mounts';
export * from './filesystem-cleaner';
export * from './exclusive-open';
export * from './block-cleaner';
export * from './wipe';
export * from './limiter';
export * from './retry-backoff';
export * from './process-table';
export * from './cleanup-job';
export * from './clean-volume';
export * from './stall-watchdog';
