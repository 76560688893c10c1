/**
 * `@zkq/core/internal`: what zkq's own packages (producer, worker, bullmq,
 * cli, testing) share beyond the public API: the protocol, the queue store,
 * the runtime's parts, the layout and the codecs. It is not public: no
 * semver promise, any release may change or remove a name. Applications
 * import from `@zkq/core` (src/index.ts) only.
 */
export * from './errors.js';
export * from './queue/index.js';
export * from './recipes/index.js';
export * from './zk/index.js';
