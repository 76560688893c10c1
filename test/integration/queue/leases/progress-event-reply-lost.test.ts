/**
 * A progress write whose reply was lost after the server applied it logs
 * its `progress` event once. The write is no receipt's (a renewal is safe
 * to send twice), but its event node is a sequential create: sent again as
 * it was, the multi logged the event a second time.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { QueueStore } from '@zkq/core/internal';
import { Queue, QueueEvents } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { cleanups } from '../../../helpers/cleanups.js';
import { OP, request } from '../../../helpers/fault-proxy.js';
import { proxied, within } from '../../../helpers/proxied-worker.js';
import { queueEnv } from '../../../helpers/queue.js';
import { waitFor } from '../../../helpers/zk.js';
import { prefixSession } from '../../../helpers/znodes.js';

test('a progress write whose reply was lost logs its progress event once', async (t) => {
  const env = await queueEnv(t);
  const defer = cleanups(t);
  const { proxy, via } = await proxied(defer, env);
  const name = 'progress-event-reply-lost';
  const events = new QueueEvents(name, env);
  defer(() => events.close());
  const progress: unknown[] = [];
  const completed: string[] = [];
  events.on('progress', ({ data }) => progress.push(data));
  events.on('completed', ({ jobId }) => completed.push(jobId));
  await events.waitUntilReady();
  const queue = new Queue(name, env);
  defer(() => queue.close());
  const job = await queue.add('j', {});
  const lost = proxy.loseReply(request(OP.multi, `/claims/${job.id}`, '"progress":57'));
  const worker = new Worker(
    name,
    async (j) => {
      await j.updateProgress(57);
      return 'ok';
    },
    { ...via, lockDuration: 30_000, housekeeping: false }, // no renewal in the test's time
  );
  worker.on('error', () => undefined);
  defer(() => worker.close());
  await within(lost.fired, 'the progress write sent, its reply lost');
  await waitFor(() => completed.includes(job.id), { what: 'the completion heard' });
  // the events of one job are logged in order: the progress events all come before its completion
  const store = new QueueStore(await prefixSession(t, env), name);
  const logged = await store.session.getChildren(store.layout.eventLog);
  let nodes = 0;
  for (const n of logged) {
    const { data } = await store.session.getData(`${store.layout.eventLog}/${n}`);
    if (data.toString().includes('"progress"')) nodes++;
  }
  assert.equal(nodes, 1, 'one event node holds the progress');
  assert.deepEqual(progress, [57], 'the progress heard once');
});
