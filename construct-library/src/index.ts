/**
 * The construct library's entry: the LocalVolumeProvisioner construct, its props and
 * the monitoring objects it creates. src/constructs and src/config beside this file
 * link to the repository's src/, the one source of both.
 */
export * from './constructs';
