/**
 * Only the leader and the first two behind it in the election's line poll
 * the delayed jobs; the other workers are reserves, which look only when
 * their session's Backstop read finds delayed containers. When the leader
 * and both standbys are cut off together (their links frozen, their
 * sessions alive: one host partitioned, or one process holding the first
 * places stopped), a reserve promotes due jobs, well before those sessions
 * end. The reserve's short session timeout makes its Backstop read come
 * about every 800 ms; the frozen ones keep theirs for 30 s.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Session } from '@zkq/core';
import { Housekeeper, openSession, QueueStore } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { TcpProxy } from '@zkq/testing';
import { queueEnv } from '../../../helpers/queue.js';
import { nextEvent, waitFor } from '../../../helpers/zk.js';

const QUEUE = 'reserve';
const FRONT_SESSION_MS = 30_000;
const RESERVE_SESSION_MS = 3000;

test('the leader and both standbys cut off together: a reserve promotes due jobs before their sessions end', async (t) => {
  const env = await queueEnv(t, FRONT_SESSION_MS);
  const queue = new Queue(QUEUE, env);
  t.after(() => queue.close());
  const member = async (id: string, sessionTimeout: number, proxy?: TcpProxy) => {
    const connectionString = proxy?.connectionString ?? env.connection.connectionString;
    const session: Session = await openSession({ connectionString, sessionTimeout }, env.prefix);
    const store = new QueueStore(session, QUEUE);
    await store.init();
    const keeper = new Housekeeper(store, id, 60_000);
    keeper.on('error', () => undefined);
    t.after(async () => {
      // the session first: a frozen member's close would wait on its link
      await session.close({ timeout: 0 });
      await keeper.close();
    });
    return keeper;
  };
  const proxies: TcpProxy[] = [];
  const front: Housekeeper[] = [];
  for (const id of ['leader', 'standby-1', 'standby-2']) {
    const proxy = await TcpProxy.start(env.connection.connectionString);
    t.after(() => proxy.stop());
    proxies.push(proxy);
    const keeper = await member(id, FRONT_SESSION_MS, proxy);
    const elected = id === 'leader' ? nextEvent(keeper, 'elected') : undefined;
    await keeper.start();
    await elected;
    front.push(keeper);
  }
  const reserve = await member('reserve', RESERVE_SESSION_MS);
  const promoted = new Set<string>();
  reserve.on('promoted', (ids) => {
    for (const id of ids) promoted.add(id);
  });
  await reserve.start();

  for (const proxy of proxies) proxy.freeze();
  const cutAt = Date.now();
  try {
    const jobs = await Promise.all([0, 1, 2].map((i) => queue.add('later', { i }, { delay: 300 })));
    await waitFor(() => jobs.every((j) => promoted.has(j.id)), {
      what: 'the reserve promoting the due jobs',
      timeoutMs: FRONT_SESSION_MS / 2,
    });
    for (const j of jobs) assert.equal(await queue.getJobState(j.id), 'waiting');
    assert.equal(reserve.isLeader, false, 'nobody else was elected: the front still held the line');
    t.diagnostic(`promoted ${Date.now() - cutAt} ms after the front was cut off`);
  } finally {
    for (const proxy of proxies) proxy.restore();
  }
});
