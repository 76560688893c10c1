/**
 * @zkq/bullmq: BullMQ 6 on ZooKeeper. Pass `createZooKeeperBackend` to
 * BullMQ's `withBackend` (or `setDefaultBackendFactory`) and BullMQ's own
 * Queue, Worker and QueueEvents run on zkq's protocol: the same queues zkq's
 * Queue, Worker and CLI use.
 */
export { ZooKeeperQueueBackend } from './backend.js';
export { type CancellationRelay, cancelJob, relayCancellation } from './cancels.js';
export type { ZooKeeperConnectionOptions } from './context.js';
export { NotSupportedError } from './errors.js';
export { createZooKeeperBackend } from './factory.js';
