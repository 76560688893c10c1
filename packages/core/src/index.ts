export * from './errors.js';
export * from './zk/index.js';
