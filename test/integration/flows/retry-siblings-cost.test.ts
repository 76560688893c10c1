/**
 * retryJobs over many finished children of one parent: each retried child
 * makes itself pending again by writing the parent's dependency node at the
 * version its unit read (role `reread`). All of them are built from the
 * same read and packed into one transaction; the second meets the first's
 * write, is built again and sent alone, and the rest are sent again still
 * stale, to fail on the next one: N siblings cost N transactions of up to
 * MAX_OPS ops each, O(N^2) ops (300 siblings: ~8 s on a loaded machine,
 * where a retry of 300 plain jobs is one transaction).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Op, OpResult } from '@zkq/core';
import { Worker } from '@zkq/worker';
import { flowEnv } from '../../helpers/flows.js';
import { waitFor } from '../../helpers/zk.js';

test('retryJobs over the children of one parent sends each child a bounded number of times', {}, async (t) => {
  const {
    env,
    flows,
    queues: { kids },
  } = await flowEnv(t, 'kids');
  const children = 150;
  const tree = await flows.add({
    name: 'parent',
    queueName: 'parents',
    children: Array.from({ length: children }, () => ({ name: 'kid', queueName: 'kids' })),
  });
  let done = 0;
  const worker = new Worker('kids', async () => 'v', { ...env, concurrency: 20 });
  worker.on('completed', () => {
    done++;
  });
  await waitFor(() => done === children, { what: 'every child to complete', timeoutMs: 60_000 });
  await worker.close();

  const session = await kids.client;
  const original = session.multi.bind(session);
  let opsSent = 0;
  session.multi = (ops: readonly Op[]): Promise<OpResult[]> => {
    opsSent += ops.length;
    return original(ops);
  };
  await kids.retryJobs({ state: 'completed' });
  assert.deepEqual(await tree.job.getDependenciesCount(), {
    processed: 0,
    unprocessed: children,
    ignored: 0,
    failed: 0,
  });
  // a retried child is a handful of ops (record, pointers, its entry, the node): 20 per child is ample
  assert.ok(opsSent <= 20 * children, `${opsSent} ops sent to retry ${children} children`);
});
