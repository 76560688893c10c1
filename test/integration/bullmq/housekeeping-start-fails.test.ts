/**
 * A BullMQ Worker whose housekeeping failed to start (its election node's
 * create cut off with the connection, or applied with its reply lost; the
 * session's retries spent) starts it again with its next claim: it stands
 * for the queue's election once, as a Worker whose first start went through
 * does. The housekeeper whose start failed was kept, and the next claim
 * only registered the Worker: no election, no stale judgment, for as long
 * as it ran. A node the failed join left in line is removed by the next
 * (else it would stand first in line for the session's life, and nobody
 * would lead).
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

test('a Worker whose election join was applied, its reply lost, stands for the election once with its next claim', async (t) => {
  const defer = cleanups(t);
  const { connection, env } = await bullEnv(t);
  const proxy = await FaultProxy.start(env.connection.connectionString);
  defer(() => proxy.stop());
  const layout = new QueueLayout('hk-lost');
  let failed!: () => void;
  const reported = new Promise<void>((resolve) => {
    failed = resolve;
  });
  // the join is applied; its reply is lost and the connection refused until the failure is reported
  const lost = proxy.loseReply(request([OP.create, OP.create2], `${layout.leaderDir}/n-`), reported);
  // its look for the node it may have made times out while the session lives on (and its node with it)
  const worker = new Worker('hk-lost', async () => 'done', {
    connection: {
      ...connection,
      connectionString: proxy.connectionString,
      retry: { maxAttempts: 1 },
      requestTimeout: 1000,
      sessionTimeout: 20_000,
    },
    runRetryDelay: 100,
  });
  worker.on('error', () => lost.hasFired && failed());
  defer(() => worker.close());
  await lost.fired;
  await reported;
  const observer = await Session.connect({
    connectionString: env.connection.connectionString,
    namespace: `/${env.prefix}`,
  });
  defer(() => observer.close());
  const leftover = await observer.getChildren(layout.leaderDir);
  assert.equal(leftover.length, 1, 'the node of the join whose reply was lost');

  const queue = new Queue('hk-lost', { connection });
  defer(() => queue.close());
  const completed = nextEvent(worker, 'completed', 30_000);
  await queue.add('one', {});
  await completed;
  const nodes = await observer.getChildren(layout.leaderDir);
  assert.equal(nodes.length, 1, `one election node for the Worker, found ${JSON.stringify(nodes)}`);
  assert.notEqual(nodes[0], leftover[0], 'the node left in line was removed, the Worker joined anew');
});
