export * from './errors.js';
export * from './queue/index.js';
export * from './recipes/index.js';
export * from './zk/index.js';
