/** createZooKeeperBackend: the BackendFactory an app hands to BullMQ. */
import { DEFAULT_PREFIX } from '@zkq/core';
import { validateConnection, validatePrefix, validateRateLimit } from '@zkq/core/internal';
import type { BackendFactory, QueueBaseOptions } from 'bullmq';
import { ZooKeeperQueueBackend } from './backend.js';
import { BackendContext, type BackendOptions, SharedSession, type ZooKeeperConnectionOptions } from './context.js';

/**
 * Builds a ZooKeeperQueueBackend for one Queue, Worker, QueueEvents or
 * FlowProducer. Pass it to `withBackend` or `setDefaultBackendFactory`:
 *
 * ```ts
 * import { withBackend } from 'bullmq';
 * import { createZooKeeperBackend } from '@zkq/bullmq';
 * const { Queue, Worker } = withBackend(createZooKeeperBackend);
 * const queue = new Queue('emails', { connection: { connectionString: '127.0.0.1:2181' } });
 * ```
 *
 * `connection.namespace` names the node the queue lives under, as zkq's own
 * `prefix` does; unset, it is zkq's default (`zkq`), so zkq's Queue, Worker
 * and CLI see the same queues. Each backend opens its own
 * ZooKeeper session; a Worker's backend also joins the queue's housekeeping
 * election.
 */
export const createZooKeeperBackend: BackendFactory<ZooKeeperQueueBackend, ZooKeeperConnectionOptions> = (
  name: string,
  opts: QueueBaseOptions<ZooKeeperConnectionOptions>,
  factoryOpts = {},
) => {
  validateConnection(opts.connection);
  const { limiter } = opts as BackendOptions;
  if (limiter !== undefined) validateRateLimit(limiter); // a Worker's: refused in its constructor
  const { namespace, ...connection } = opts.connection;
  const ns = namespace ?? DEFAULT_PREFIX;
  validatePrefix(ns);
  const shared = new SharedSession(connection, ns);
  let backend: ZooKeeperQueueBackend | undefined;
  const ctx = new BackendContext(name, opts as BackendOptions, shared, (err) => backend?.emit('error', err));
  backend = new ZooKeeperQueueBackend(ctx, true, {
    worker: factoryOpts.withBlockingConnection === true,
    listener: factoryOpts.blocking === true && factoryOpts.withBlockingConnection !== true,
  });
  return backend;
};
