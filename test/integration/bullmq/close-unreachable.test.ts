/**
 * BullMQ's classes on the ZooKeeper backend close within a bound when
 * ZooKeeper no longer answers (a frozen link): the backend's close gives up
 * once ZooKeeper has answered nothing for 5 s, as zkq's Worker does, instead
 * of waiting out request timeouts, retries and the session timeout.
 * BullMQ's own close() first waits for its main loop and for the jobs
 * running to be written (its sequence, not the backend's: bounded by the
 * request timeout and retries, some 40 s): during an outage, close(true) is
 * the bounded one. Asserted with a wide margin: what fails is
 * a hang, not a slow machine.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { TcpProxy } from '@zkq/testing';
import { withBackend } from 'bullmq';
import { cleanups } from '../../helpers/cleanups.js';
import { bullEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

const { Queue, Worker } = withBackend(createZooKeeperBackend);
/** Three times the bound of close() (5 s; a Queue's, 3 s), and far below the hang. */
const BOUND_WITH_MARGIN_MS = 15_000;
/** Five times the bound of close(true) (a second); it took 13 s. */
const FORCED_BOUND_WITH_MARGIN_MS = 5000;

async function timed(close: () => Promise<void>): Promise<number> {
  const t0 = performance.now();
  await close();
  return performance.now() - t0;
}

async function behindProxy(t: { name?: string; after(fn: () => unknown): void }) {
  const { connection } = await bullEnv(t);
  const proxy = await TcpProxy.start(connection.connectionString);
  const after = cleanups(t);
  after(() => proxy.stop());
  return { after, proxy, connection: { ...connection, connectionString: proxy.connectionString } };
}

test('a Queue, and an idle BullMQ Worker with close(true), close within the bound over a frozen link', async (t) => {
  const { after, proxy, connection } = await behindProxy(t);
  const queue = new Queue('b', { connection });
  const worker = new Worker('b', async () => 'ok', { connection });
  worker.on('error', () => undefined);
  after(() => Promise.all([worker.close(true), queue.close()]));
  await Promise.all([queue.waitUntilReady(), worker.waitUntilReady()]);
  const job = await queue.add('j', {});
  await waitFor(async () => (await queue.getJobState(job.id as string)) === 'completed', { what: 'the job done' });
  proxy.freeze();
  const [forced, queued] = await Promise.all([timed(() => worker.close(true)), timed(() => queue.close())]);
  assert.ok(forced < FORCED_BOUND_WITH_MARGIN_MS, `the worker's close(true) took ${Math.round(forced)} ms`);
  assert.ok(queued < BOUND_WITH_MARGIN_MS, `the queue's close() took ${Math.round(queued)} ms`);
});

test('a BullMQ Worker running a job closes with close(true) within the bound over a frozen link', async (t) => {
  const { after, proxy, connection } = await behindProxy(t);
  const queue = new Queue('b', { connection });
  let started = false;
  const worker = new Worker(
    'b',
    async (_job, _token, signal) => {
      started = true;
      await new Promise((resolve) => signal?.addEventListener('abort', resolve));
    },
    { connection },
  );
  worker.on('error', () => undefined);
  after(() => Promise.all([worker.close(true), queue.close()]));
  await queue.add('j', {});
  await waitFor(() => started, { what: 'the job started' });
  proxy.freeze();
  const took = await timed(() => worker.close(true));
  assert.ok(took < FORCED_BOUND_WITH_MARGIN_MS, `close(true) took ${Math.round(took)} ms`);
});
