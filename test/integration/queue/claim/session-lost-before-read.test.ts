/**
 * A claim writes no record; the records are read after it. When the claiming
 * session is lost between the claim and that read (its claim nodes vanish
 * with it, and another worker may take the jobs at once), the read runs on
 * the new session: the attempts must not be handed out, or the worker would
 * start a job another worker runs (a run after its finish).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { claimJobs, lookAtHead, QueueStore } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { queueEnv } from '../../../helpers/queue.js';
import { expire } from '../../../helpers/zk.js';
import { prefixSession } from '../../../helpers/znodes.js';

test('claims whose session was lost before their records were read are not handed out', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('lost-read', env);
  t.after(() => queue.close());
  await queue.addBulk(Array.from({ length: 3 }, (_, i) => ({ name: 'j', data: i })));
  const session = await prefixSession(t, env);
  const store = new QueueStore(session, 'lost-read');
  await store.init();
  const { candidates } = await lookAtHead(store, { limit: 10, exclude: [] });
  // the session expires right after the claim committed, before the records are read
  const multi = session.multi.bind(session);
  let staged = false;
  session.multi = (async (ops: Parameters<typeof multi>[0]) => {
    const results = await multi(ops);
    if (!staged) {
      staged = true;
      await expire(session, env.connection.connectionString);
    }
    return results;
  }) as typeof session.multi;
  const got = await claimJobs(store, candidates, { workerId: 'a', lockDuration: 600_000 });
  assert.deepEqual(
    got.claimed.map((c) => c.record.id),
    [],
    'no attempt handed out on claims lost with their session',
  );
  // the jobs are there for the next claim
  session.multi = multi;
  const again = await lookAtHead(store, { limit: 10, exclude: [] });
  const next = await claimJobs(store, again.candidates, { workerId: 'a', lockDuration: 600_000 });
  assert.equal(next.claimed.length, 3);
});
