/**
 * Retention by count inside the finish plans from a cached count of the
 * finished set. A job removed (or retried) out of that set lowers its count
 * without moving the set node's version, so the next finish of a worker
 * whose view already listed the set's pointers still counts it: at the bound
 * by its view, it trims the oldest job although the set holds fewer than the
 * count, and a job that should be kept is deleted.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

const keep = { count: 5 };

/** Five completed jobs, then a second worker whose view has listed them (its first finish trimmed the oldest). */
async function setup(t: { name?: string; after: (fn: () => unknown) => void }) {
  const env = await queueEnv(t);
  const queue = new Queue('q', env);
  t.after(() => queue.close());
  const jobs = [];
  for (let i = 0; i < 5; i++) jobs.push(await queue.add('j', i, { removeOnComplete: keep }));
  let doneA = 0;
  const a = new Worker('q', async () => 'ok', env);
  a.on('completed', () => {
    doneA++;
  });
  await waitFor(() => doneA === 5, { what: 'the first five to complete' });
  await a.close();
  let done = 0;
  const b = new Worker('q', async () => 'ok', env);
  b.on('completed', () => {
    done++;
  });
  t.after(() => b.close());
  jobs.push(await queue.add('j', 5, { removeOnComplete: keep }));
  await waitFor(() => done === 1, { what: 'the sixth job to complete' });
  assert.equal((await queue.getJobCounts('completed')).completed, 5);
  assert.equal(await queue.getJob(jobs[0]?.id as string), undefined, 'the oldest was trimmed');
  return { queue, jobs, done: () => done };
}

test('removeOnComplete count: a finish after a hand removal keeps every job under the bound', {}, async (t) => {
  const { queue, jobs, done } = await setup(t);
  await queue.remove(jobs[4]?.id as string);
  assert.equal((await queue.getJobCounts('completed')).completed, 4);
  await queue.add('j', 6, { removeOnComplete: keep });
  await waitFor(() => done() === 2, { what: 'the seventh job to complete' });
  // 4 left + 1 new = 5: nothing to trim
  assert.equal((await queue.getJobCounts('completed')).completed, 5);
  assert.ok(await queue.getJob(jobs[1]?.id as string), 'the oldest job under the bound is kept');
});

test('removeOnComplete count: a finish after a retry out of completed keeps every job under the bound', {}, async (t) => {
  const { queue, jobs, done } = await setup(t);
  const retried = await queue.getJob(jobs[4]?.id as string);
  await retried?.retry('completed');
  await waitFor(() => done() === 2, { what: 'the retried job to complete again' });
  assert.equal((await queue.getJobCounts('completed')).completed, 5);
  assert.ok(await queue.getJob(jobs[1]?.id as string), 'the oldest job under the bound is kept');
});
