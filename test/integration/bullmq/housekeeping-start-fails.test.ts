/**
 * A BullMQ Worker whose housekeeping failed to start (its election node's
 * create cut off with the connection, the session's retries spent) starts
 * it again with its next claim: it stands for the queue's election once,
 * as a Worker whose first start went through does. The housekeeper whose
 * start failed was kept, and the next claim only registered the Worker:
 * no election, no stale judgment, for as long as it ran.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { Session } from '@zkq/core';
import { QueueLayout } from '@zkq/core/internal';
import { withBackend } from 'bullmq';
import { cleanups } from '../../helpers/cleanups.js';
import { FaultProxy, OP, request } from '../../helpers/fault-proxy.js';
import { bullEnv } from '../../helpers/queue.js';
import { nextEvent } from '../../helpers/zk.js';

const { Queue, Worker } = withBackend(createZooKeeperBackend);

test('a Worker whose housekeeping failed to start stands for the election with its next claim, once', async (t) => {
  const defer = cleanups(t);
  const { connection, env } = await bullEnv(t);
  const proxy = await FaultProxy.start(env.connection.connectionString);
  defer(() => proxy.stop());
  const layout = new QueueLayout('hk-retry');
  // the first join of the election is cut off before it reaches the server; one attempt, no retry
  const cut = proxy.cutBefore(request([OP.create, OP.create2], `${layout.leaderDir}/n-`), 0);
  const worker = new Worker('hk-retry', async () => 'done', {
    connection: { ...connection, connectionString: proxy.connectionString, retry: { maxAttempts: 1 } },
    runRetryDelay: 100,
  });
  const errors: unknown[] = [];
  worker.on('error', (err) => errors.push(err));
  defer(() => worker.close());
  await cut.fired;

  const queue = new Queue('hk-retry', { connection });
  defer(() => queue.close());
  const completed = nextEvent(worker, 'completed', 30_000);
  await queue.add('one', {});
  // a claim runs only once the housekeeping it starts first has started
  await completed;
  assert.ok(errors.length > 0, 'the failed start was reported');

  const observer = await Session.connect({
    connectionString: env.connection.connectionString,
    namespace: `/${env.prefix}`,
  });
  defer(() => observer.close());
  const nodes = await observer.getChildren(layout.leaderDir).catch(() => []);
  assert.equal(nodes.length, 1, `one election node for the Worker, found ${JSON.stringify(nodes)}`);
});
