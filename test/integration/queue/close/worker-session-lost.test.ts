/**
 * A Worker closed while ZooKeeper is unreachable: its session is lost after
 * the session timeout, and nothing it could still write would be applied.
 * close() waited for the housekeeping leader's promotion round, which went on
 * retrying its reads for half a minute; now it ends in a few seconds, as a
 * Queue closed the same way does (a second for its deferred writes, then the
 * disconnect).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Queue } from '@zkq/producer';
import { sharedZooKeeper, TcpProxy } from '@zkq/testing';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../../helpers/queue.js';
import { waitFor } from '../../../helpers/zk.js';

test('a worker closed while ZooKeeper is unreachable ends soon after its session is lost', async (t) => {
  const env = await queueEnv(t); // session timeout 4 s
  const proxy = await TcpProxy.start(await sharedZooKeeper());
  t.after(() => proxy.stop());
  const cut = { ...env, connection: { ...env.connection, connectionString: proxy.connectionString } };
  const queue = new Queue('unreachable', cut);
  const worker = new Worker('unreachable', async () => 'ok', { ...cut, concurrency: 2 });
  worker.on('error', () => undefined);
  for (let i = 0; i < 5; i++) await queue.add('j', i);
  await waitFor(async () => (await queue.getJobCounts('completed')).completed === 5, { what: '5 completed' });
  await waitFor(() => worker.isLeader, { what: 'the worker leads housekeeping' });
  proxy.cut();
  await queue.close();
  const start = Date.now();
  await worker.close();
  const took = Date.now() - start;
  assert.ok(took < 10_000, `worker.close() took ${took} ms`);
});
