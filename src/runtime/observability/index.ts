export * from './events';
export * from './health';
export * from './http-server';
export * from './listen-address';
export * from './logger';
export * from './metrics';
