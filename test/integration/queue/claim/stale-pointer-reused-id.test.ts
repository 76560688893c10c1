/**
 * A ready pointer left without its record is dropped by the idle look only
 * while its id has no record. Once the id is added again (a record and a
 * pointer of its own), the old pointer stays; after the job ran (through
 * one of its two pointers) the other one names a finished record. A claim
 * skips it as not claimable; it used to count as a collision (the view
 * scanned again at once) and the idle look took it for work, so an idle
 * worker went round without a pause for as long as the pointer stayed,
 * which was forever. Now the idle look drops it, while the record is still
 * at the version the claim read.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { QueueStore } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../../helpers/queue.js';
import { waitFor } from '../../../helpers/zk.js';
import { prefixSession } from '../../../helpers/znodes.js';

test('a pointer left behind by an id added again is dropped once its job has finished', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('stale', env);
  t.after(() => queue.close());
  await queue.add('j', { v: 1 }, { jobId: 'x' });
  const session = await prefixSession(t, env);
  const store = new QueueStore(session, 'stale');
  await store.init();
  await session.delete(store.layout.job('x')); // its pointer stays, without a record
  await queue.add('j', { v: 2 }, { jobId: 'x' }); // a record again, and a pointer of its own
  let runs = 0;
  const worker = new Worker('stale', async () => void runs++, { ...env, drainDelay: 600, concurrency: 2 });
  t.after(() => worker.close(true));
  await waitFor(async () => (await queue.getJobState('x')) === 'completed' || undefined, { what: 'x completed' });
  assert.equal(runs, 1);
  await waitFor(async () => (await readyPointers(store)).length === 0, {
    what: 'the pointer left behind dropped',
    timeoutMs: 10_000,
  });
});

/** Every ready pointer of the queue's plain lane. */
async function readyPointers(store: QueueStore): Promise<string[]> {
  const lane = store.layout.lane('p-0000000000');
  const out: string[] = [];
  for (const b of await store.session.getChildren(lane).catch(() => [])) {
    for (const n of await store.session.getChildren(`${lane}/${b}`)) out.push(`${lane}/${b}/${n}`);
  }
  return out.sort();
}
