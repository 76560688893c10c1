/**
 * A claim under global limits reads its records in the same flight as its
 * claim multi, as a plain claim does: the read-only multi is handed to the
 * session right behind the multi that admits the group, and is used only
 * when it certainly came after the claim (the claim's reply come, on the
 * same connection, beside the multi that committed it, showing the claim's
 * own node); else the records are read again after the claim.
 */
import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import type { Session } from '@zkq/core';
import { admit, claimLimited, lookAtHead, QueueStore, readLimitState } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { TcpProxy } from '@zkq/testing';
import { type QueueTestEnv, queueEnv } from '../../helpers/queue.js';
import { countReadsAtClaims } from '../../helpers/requests.js';
import { nextEvent } from '../../helpers/zk.js';
import { prefixSession } from '../../helpers/znodes.js';

const claimOpts = { workerId: 'a', lockDuration: 600_000 };

/** Three jobs in queue `name` under the limits `limit` sets, and a worker's store on `session` (default: its own). */
async function limitedQueue(
  t: TestContext,
  name: string,
  limit: (queue: Queue) => Promise<unknown>,
  session?: (env: QueueTestEnv) => Promise<Session>,
) {
  const env = await queueEnv(t);
  const queue = new Queue(name, env);
  t.after(() => queue.close());
  await limit(queue);
  await queue.addBulk(Array.from({ length: 3 }, (_, i) => ({ name: 'j', data: { i } })));
  const mine = await (session ?? ((e) => prefixSession(t, e)))(env);
  const store = new QueueStore(mine, name);
  await store.init();
  const admission = admit(await readLimitState(store), undefined, 10, Date.now(), false);
  assert.equal(admission.kind, 'open');
  const { candidates } = await lookAtHead(store, { limit: 10, exclude: [] });
  return { env, store, session: mine, admission, candidates };
}

test('a claim under a global concurrency reads its records in the same flight as the claim, and nothing after it', async (t) => {
  const { store, session, admission, candidates } = await limitedQueue(t, 'flight', (q) => q.setGlobalConcurrency(5));
  const counts = countReadsAtClaims(session, store.layout);
  const got = await claimLimited(store, candidates, claimOpts, admission);
  assert.deepEqual(
    got.claimed.map((c) => c.record.data),
    [{ i: 0 }, { i: 1 }, { i: 2 }],
  );
  assert.ok(
    got.claimed.every((c) => c.slot),
    'each attempt holds a slot',
  );
  assert.deepEqual(counts.readsAtReply, [1], 'the read was sent before the claim was answered');
  assert.equal(counts.reads, 1, 'no second read after the claim');
});

test('a limited claim sent again after a slot was taken uses the read beside the multi that committed it', async (t) => {
  const { env, store, session, admission, candidates } = await limitedQueue(t, 'slot-taken', (q) =>
    q.setGlobalConcurrency(5),
  );
  assert.ok(admission.kind === 'open' && admission.slots);
  // another worker takes the first slot this one was admitted with: its multi fails, and is sent again
  // on a slot left over, with a read beside it of its own
  const other = await prefixSession(t, env);
  await other.create(store.layout.slot(admission.slots[0] as string), undefined, 'ephemeral');
  const counts = countReadsAtClaims(session, store.layout);
  const got = await claimLimited(store, candidates, claimOpts, admission);
  assert.deepEqual(
    got.claimed.map((c) => c.record.data),
    [{ i: 0 }, { i: 1 }, { i: 2 }],
  );
  assert.deepEqual(counts.readsAtReply, [1, 2], 'two claim multis, each with a read beside it');
  assert.equal(counts.reads, 2, 'no read after the claim');
});

test('a claim under a rate limit handed over while the connection was down has its records read again after it', async (t) => {
  const proxy: { it?: TcpProxy } = {};
  t.after(() => proxy.it?.stop());
  const { session, store, admission, candidates } = await limitedQueue(
    t,
    'down',
    (q) => q.setGlobalRateLimit(10, 60_000),
    async (env) => {
      proxy.it = await TcpProxy.start(env.connection.connectionString);
      return prefixSession(t, env, proxy.it.connectionString);
    },
  );
  assert.ok(admission.kind === 'open' && admission.window, 'the claim writes the window');
  const counts = countReadsAtClaims(session, store.layout);
  // the claim and the read beside it are handed over between two connections: sent on the next one,
  // in order, but not on the connection the claim was handed to
  const suspended = nextEvent(session, 'suspended');
  proxy.it?.cut();
  await suspended;
  const claiming = claimLimited(store, candidates, claimOpts, admission);
  proxy.it?.restore();
  const got = await claiming;
  assert.deepEqual(
    got.claimed.map((c) => c.record.data),
    [{ i: 0 }, { i: 1 }, { i: 2 }],
  );
  assert.deepEqual(counts.readsAtReply, [1], 'one claim multi, the read beside it handed over before its reply');
  assert.equal(counts.reads, 2, 'the read beside the claim is not used: the records are read again');
});
