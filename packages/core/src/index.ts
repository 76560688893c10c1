export * from './errors.js';
export * from './recipes/index.js';
export * from './zk/index.js';
