/**
 * What the Worker shares with its own package and no one else: its queue
 * store, for helpers that read the queue through the worker's session
 * (metrics.ts reads the queue depth with it).
 */
import type { QueueStore } from '@zkq/core/internal';

const stores = new WeakMap<object, QueueStore>();

export function setWorkerStore(worker: object, store: QueueStore): void {
  stores.set(worker, store);
}

/** The worker's store once it has connected, else undefined. */
export function workerStore(worker: object): QueueStore | undefined {
  return stores.get(worker);
}
