/**
 * An add to a finished set without a count bound rewrites the set's node
 * (`touch`), so that the next bounded finish reads the count again and trims
 * the excess. A malformed record moved to `failed` by a worker's claim
 * (quarantine) adds a pointer without that touch: a worker whose view has
 * listed the set plans its next bounded failure from the count before it,
 * trims one for one, and leaves the set over its bound.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { QueueLayout } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

const keep = { removeOnFail: { count: 2 } };

test('removeOnFail count: a quarantined record added to failed is trimmed by the next bounded failure', {}, async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('q', env);
  t.after(() => queue.close());
  let failed = 0;
  const start = () => {
    const w = new Worker(
      'q',
      async () => {
        throw new Error('broken');
      },
      env,
    );
    w.on('failed', () => {
      failed++;
    });
    w.on('error', () => undefined);
    t.after(() => w.close());
    return w;
  };
  const a = start();
  await queue.add('j', 1, keep);
  await queue.add('j', 2, keep);
  await waitFor(() => failed === 2, { what: 'two failures' });
  await a.close();
  // a worker whose view lists the set: its first failure trims the oldest
  start();
  await queue.add('j', 3, keep);
  await waitFor(() => failed === 3, { what: 'the third failure' });
  assert.equal((await queue.getJobCounts('failed')).failed, 2);

  const session = await queue.client;
  const layout = new QueueLayout('q');
  await session.create(layout.job('garbage'), Buffer.from('{not json'));
  await session.create(`${layout.bucket('p-0000000000', 0)}/qn-garbage-`, undefined, 'persistent_sequential');
  await waitFor(async () => (await queue.getJobCounts('failed')).failed === 3, { what: 'the record quarantined' });

  await queue.add('j', 4, keep);
  await waitFor(() => failed === 4, { what: 'the bounded failure' });
  assert.equal((await queue.getJobCounts('failed')).failed, 2, 'the bounded failure trims the set to its count');
});
