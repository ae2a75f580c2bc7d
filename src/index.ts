/** The package's main entry: the construct and the configuration model it shares with the runtime. */
export * from './config';
export * from './constructs';
