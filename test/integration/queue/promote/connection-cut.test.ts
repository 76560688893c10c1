/**
 * A connection cut just before a promotion's write: the session and the
 * leadership survive, and promotion goes on (delayed jobs and backoff retries
 * still run). The fault proxy picks the write by the job's id in its path.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Queue } from '@zkq/producer';
import { cleanups } from '../../../helpers/cleanups.js';
import { request, WRITE_OPS } from '../../../helpers/fault-proxy.js';
import { countingWorker, finishedState, proxied, within } from '../../../helpers/proxied-worker.js';
import { queueEnv } from '../../../helpers/queue.js';
import { waitFor } from '../../../helpers/zk.js';

test('a connection cut during a promotion does not end promotion: delayed jobs and backoff retries still run', async (t) => {
  const env = await queueEnv(t);
  const defer = cleanups(t);
  const { proxy, via } = await proxied(defer, env);
  const queue = new Queue('promote-cut', env);
  defer(() => queue.close());
  const w = countingWorker(defer, 'promote-cut', { ...via, stalledInterval: 500 }, async (job) => {
    if (job.name === 'retry' && job.attemptsMade === 0) throw new Error('first attempt fails');
    return 'ok';
  });
  await waitFor(() => w.worker.isLeader, { what: 'the worker leads' });
  // The promotion's write (it moves the job out of delayed/) never reaches the
  // server: the connection drops for 300 ms; the session and the leadership survive.
  const cut = proxy.cutBefore(request(WRITE_OPS, '/delayed/', '-cut-during-promotion'), 300);
  await queue.add('first', {}, { delay: 500, jobId: 'cut-during-promotion' });
  await within(cut.done, "the promotion's write seen and cut");
  const later = await queue.add('later', {}, { delay: 500 });
  const retried = await queue.add('retry', {}, { attempts: 2, backoff: 500 });
  for (const id of ['cut-during-promotion', later.id, retried.id]) {
    assert.equal(await finishedState(queue, id), 'completed', `job ${id} completed`);
  }
  assert.equal(w.runs.get('cut-during-promotion'), 1);
  assert.equal(w.runs.get(later.id), 1);
  assert.equal(w.runs.get(retried.id), 2);
});
