/** Errors of the BullMQ backend that callers tell apart. */
import { ZkqError } from '@zkq/core';

/**
 * A BullMQ operation this backend does not offer yet (flows, job schedulers,
 * rate limits, deduplication keys). It fails loudly instead of misbehaving;
 * docs/bullmq-compat.md lists every such operation.
 */
export class NotSupportedError extends ZkqError {
  constructor(readonly operation: string) {
    super('ZKQ_NOT_SUPPORTED', `the ZooKeeper backend does not support ${operation} yet (see docs/bullmq-compat.md)`);
  }
}
