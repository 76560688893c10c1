/**
 * A failed child still pending for its parent in another queue, trimmed by
 * a later failure (removeOnFail count): it leaves the parent's
 * dependencies, and the parent, with nothing left pending, is released.
 * Trimmed by the worker that failed it (its record known from the finish),
 * or by a worker that reads it.
 */
import { test } from 'node:test';
import { Worker } from '@zkq/worker';
import { flowEnv } from '../../helpers/flows.js';
import { waitFor } from '../../helpers/zk.js';

async function run(t: { name?: string; after: (fn: () => unknown) => void }, sameWorker: boolean) {
  const {
    env,
    flows,
    queues: { kids, parents },
  } = await flowEnv(t, 'kids', 'parents');
  const keep = { removeOnFail: { count: 1 } };
  let failed = 0;
  const start = () => {
    const w = new Worker(
      'kids',
      async () => {
        throw new Error('broken');
      },
      env,
    );
    w.on('failed', () => {
      failed++;
    });
    t.after(() => w.close());
    return w;
  };
  const first = start();
  const tree = await flows.add({
    name: 'p',
    queueName: 'parents',
    children: [{ name: 'k', queueName: 'kids', opts: keep }],
  });
  await waitFor(() => failed === 1, { what: 'the child to fail' });
  if (!sameWorker) {
    await first.close();
    start();
  }
  await kids.add('plain', 1, keep);
  await waitFor(() => failed === 2, { what: 'the plain job to fail' });
  await waitFor(async () => (await kids.getJobCounts('failed')).failed === 1, { what: 'the child trimmed' });
  await waitFor(async () => (await parents.getJobState(tree.job.id as string)) === 'waiting', {
    what: 'the parent released',
  });
}

test('removeOnFail count: a failed child trimmed by its own worker releases its parent in another queue', {}, (t) =>
  run(t, true),
);
test('removeOnFail count: a failed child trimmed by another worker releases its parent in another queue', {}, (t) =>
  run(t, false),
);
