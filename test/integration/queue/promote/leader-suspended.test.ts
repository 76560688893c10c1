/**
 * A leader's link frozen in the middle of a look reports no error. The look
 * read a due job, then its link froze (the session suspended, then given up
 * as lost: the leadership with it); once the link is back, the look's move
 * is refused its fence (NotLeaderError: this process no longer leads) and
 * ends quietly: the next term looks again and promotes the job. Before, the
 * refusal surfaced as an `error` event (only a FencedError was kept quiet),
 * a spurious error for every such network blip. A link frozen between looks
 * (suspended, then back on the same session) reports none either.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Session } from '@zkq/core';
import { Housekeeper, openSession, QueueStore } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { TcpProxy } from '@zkq/testing';
import { queueEnv } from '../../../helpers/queue.js';
import { nextEvent, waitFor } from '../../../helpers/zk.js';

const QUEUE = 'leader-suspended';
const SESSION_MS = 2000;

async function frozenLeader(t: test.TestContext) {
  const env = await queueEnv(t);
  const queue = new Queue(QUEUE, env);
  t.after(() => queue.close());
  const proxy = await TcpProxy.start(env.connection.connectionString);
  t.after(() => proxy.stop());
  const session: Session = await openSession(
    { connectionString: proxy.connectionString, sessionTimeout: SESSION_MS },
    env.prefix,
  );
  const store = new QueueStore(session, QUEUE);
  await store.init();
  const keeper = new Housekeeper(store, 'leader', 60_000);
  const errors: unknown[] = [];
  keeper.on('error', (err) => errors.push(err));
  t.after(async () => {
    await session.close({ timeout: 0 });
    await keeper.close();
  });
  const elected = nextEvent(keeper, 'elected');
  await keeper.start();
  await elected;
  const promoted = (id: string) =>
    waitFor(async () => (await (await queue.getJob(id))?.getState()) === 'waiting', { what: `job ${id} promoted` });
  return { queue, proxy, session, store, keeper, errors, promoted };
}

test('a leader whose link freezes in a look, its session lost, reports no error, and promotes in its next term', async (t) => {
  const { queue, proxy, session, store, keeper, errors, promoted } = await frozenLeader(t);
  const job = await queue.add('d', {}, { delay: 300 });
  // the look reads the due job; then its link freezes until the session is given up as lost
  const getJob = store.getJob.bind(store);
  let froze = false;
  store.getJob = (async (id: string) => {
    const read = await getJob(id);
    if (id === job.id && !froze) {
      froze = true;
      const lost = nextEvent(session, 'lost');
      proxy.freeze();
      await lost;
      proxy.restore();
    }
    return read;
  }) as typeof store.getJob;
  await promoted(job.id);
  assert.ok(froze, "the look's read was followed by the freeze");
  await waitFor(() => keeper.isLeader, { what: 'the leader elected again on its new session' });
  assert.deepEqual(errors.map(String), [], 'no error reported');
});

test('a leader whose link freezes between looks, its session suspended and back, reports no error', async (t) => {
  const { queue, proxy, session, keeper, errors, promoted } = await frozenLeader(t);
  const job = await queue.add('d', {}, { delay: 300 });
  const suspended = nextEvent(session, 'suspended');
  proxy.freeze();
  await suspended;
  const reconnected = nextEvent(session, 'reconnected');
  proxy.restore();
  await reconnected;
  await promoted(job.id);
  assert.ok(keeper.isLeader, 'the same session leads still');
  assert.deepEqual(errors.map(String), [], 'no error reported');
});
