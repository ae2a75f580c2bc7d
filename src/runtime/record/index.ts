/** The node's durable record of each volume's state: what may be offered, what must be cleaned first. */
export * from './record-entry';
export * from './record-rules';
export * from './storage-extent';
export * from './volume-record';
