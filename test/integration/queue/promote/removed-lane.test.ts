/**
 * Promotion into a priority lane a reader removed, with no QueueEvents
 * listening: the create `into` the removed lane is the LAST op of a
 * receipt-less multi, so the executor takes its NoNode for a missing
 * receipts directory and never rebuilds the unit.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Session } from '@zkq/core';
import { Queue, QueueEvents } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../../helpers/queue.js';
import { waitFor } from '../../../helpers/zk.js';

async function scenario(t: import('node:test').TestContext, listen: boolean): Promise<void> {
  const env = await queueEnv(t);
  const queue = new Queue('q', env);
  t.after(() => queue.close());
  if (listen) {
    const events = new QueueEvents('q', env);
    t.after(() => events.close());
    await events.waitUntilReady();
  }
  const done: string[] = [];
  const errors: unknown[] = [];
  const worker = new Worker('q', async (job) => void done.push(job.id as string), {
    ...env,
    stalledInterval: 500,
  });
  worker.on('error', (e) => errors.push(e));
  t.after(() => worker.close());
  await worker.waitUntilReady();
  await waitFor(() => worker.isLeader, { what: 'leader' });
  const a = await queue.add('a', {}, { priority: 5, delay: 200 });
  await waitFor(() => done.includes(a.id as string), { what: 'a done' });
  // the worker's idle head scan removes the emptied lane p-5
  const s = await Session.connect({ connectionString: env.connection.connectionString, namespace: `/${env.prefix}` });
  t.after(() => s.close());
  await waitFor(async () => !(await s.exists('/q/ready/p-0000000005')), { what: 'lane p-5 removed' });
  const b = await queue.add('b', {}, { priority: 5, delay: 200 });
  await waitFor(() => done.includes(b.id as string), { what: 'b done', timeoutMs: 10_000 }).catch(async (e) => {
    console.log('listen', listen, 'state of b', await b.getState(), 'errors', errors.map(String));
    throw e;
  });
  assert.ok(true);
}

test('a delayed job due into a lane removed since is promoted (a QueueEvents listening)', (t) => scenario(t, true));
test('a delayed job due into a lane removed since is promoted (nobody listening)', (t) => scenario(t, false));
