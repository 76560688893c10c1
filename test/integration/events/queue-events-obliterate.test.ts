/**
 * zkq's QueueEvents left open across an obliterate: the queue made again
 * logs from sequence 0, and the listener follows that new log from its
 * start (a position in the old log means nothing in the new one), so the
 * first events of the queue made again are delivered.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Queue, QueueEvents } from '@zkq/producer';
import { queueEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

test('a QueueEvents left open across an obliterate delivers the first events of the queue made again', async (t) => {
  const env = await queueEnv(t);
  const name = 'events-reborn';
  const queue = new Queue(name, env);
  t.after(() => queue.close());
  const events = new QueueEvents(name, env);
  t.after(() => events.close());
  await events.waitUntilReady();
  const heard = new Set<string>();
  events.on('added', ({ jobId }) => heard.add(jobId));
  const sent: string[] = [];
  await waitFor(
    async () => {
      sent.push((await queue.add('probe', 0)).id);
      return sent.some((id) => heard.has(id));
    },
    { what: 'the listener to hear the queue', intervalMs: 200 },
  );
  // the old log runs further than the new one will: its last position is past the new log's first nodes
  const before = await Promise.all(Array.from({ length: 5 }, (_, n) => queue.add('before', n)));
  await waitFor(() => before.every((job) => heard.has(job.id)), { what: 'the adds before the obliterate heard' });
  await queue.obliterate();
  const after: string[] = [];
  for (let n = 0; n < 3; n++) after.push((await queue.add('after', n, { jobId: `after-${n}` })).id);
  await waitFor(() => after.every((id) => heard.has(id)), {
    what: `the adds of the queue made again heard (heard: ${[...heard].join(', ')})`,
  });
  assert.deepEqual(
    after.filter((id) => heard.has(id)),
    after,
  );
});
