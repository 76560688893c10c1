/**
 * Retention of failed jobs (removeOnFail with a count) over children of one
 * parent that fail at once: each trimmed child that is still pending for its
 * parent leaves the parent's dependencies in the trimming transaction, every
 * one of them written at the version of the dependency node read before the
 * trim. In one transaction the second sibling's write meets the first's, so
 * only one sibling is trimmed per pass and the others are dropped; no more
 * failures, no more passes: the queue keeps far more failed jobs than the
 * count (plain failed jobs are trimmed to the count in one pass).
 */
import { test } from 'node:test';
import { Worker } from '@zkq/worker';
import { flowEnv } from '../../helpers/flows.js';
import { waitFor } from '../../helpers/zk.js';

test('removeOnFail count: children of one parent that fail at once are trimmed to the count', {}, async (t) => {
  const {
    env,
    flows,
    queues: { kids },
  } = await flowEnv(t, 'kids');
  const children = 20;
  await flows.add({
    name: 'parent',
    queueName: 'parents',
    children: Array.from({ length: children }, () => ({
      name: 'kid',
      queueName: 'kids',
      opts: { removeOnFail: { count: 5 } },
    })),
  });
  let failed = 0;
  const worker = new Worker(
    'kids',
    async () => {
      throw new Error('broken');
    },
    { ...env, concurrency: children },
  );
  worker.on('failed', () => {
    failed++;
  });
  t.after(() => worker.close());
  await waitFor(() => failed === children, { what: 'every child to fail' });
  // the trailing trim after the burst runs within a second or so
  await waitFor(async () => ((await kids.getJobCounts('failed')).failed ?? 0) <= 5, {
    what: 'the failed children to be trimmed to 5',
    timeoutMs: 10_000,
  });
});
