/**
 * The records of a claim round are read in the same flight as the claim
 * multi: the read-only multi is handed to the session right behind it,
 * before its reply, and ZooKeeper answers it after the claim committed. The
 * read is used only when it certainly came after the claim: on the same
 * connection, the claim's reply come; else the records are read again after
 * the claim, as before.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { claimJobs, lookAtHead, QueueStore } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { TcpProxy } from '@zkq/testing';
import { withBackend } from 'bullmq';
import { queueEnv } from '../../../helpers/queue.js';
import { countReadsAtClaims } from '../../../helpers/requests.js';
import { nextEvent } from '../../../helpers/zk.js';
import { prefixSession } from '../../../helpers/znodes.js';

const claimOpts = { workerId: 'a', lockDuration: 600_000 };

test('a claim round reads its records in the same flight as the claim, and reads nothing after it', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('flight', env);
  t.after(() => queue.close());
  await queue.addBulk(Array.from({ length: 3 }, (_, i) => ({ name: 'j', data: { i } })));
  const session = await prefixSession(t, env);
  const store = new QueueStore(session, 'flight');
  await store.init();
  const { candidates } = await lookAtHead(store, { limit: 10, exclude: [] });
  const counts = countReadsAtClaims(session, store.layout);
  const got = await claimJobs(store, candidates, claimOpts);
  assert.deepEqual(
    got.claimed.map((c) => c.record.data),
    [{ i: 0 }, { i: 1 }, { i: 2 }],
  );
  assert.deepEqual(counts.readsAtReply, [1], 'the read was sent before the claim was answered');
  assert.equal(counts.reads, 1, 'no second read after the claim');
});

test('an edit committed between the listing and the claim is in the record its attempt holds', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('edited', env);
  const { Queue: BullQueue } = withBackend(createZooKeeperBackend);
  const bull = new BullQueue('edited', { connection: { ...env.connection, namespace: env.prefix } });
  t.after(() => Promise.all([queue.close(), bull.close()]));
  const [edited] = await queue.addBulk([
    { name: 'j', data: { v: 1 } },
    { name: 'j', data: { v: 1, other: true } },
  ]);
  const session = await prefixSession(t, env);
  const store = new QueueStore(session, 'edited');
  await store.init();
  const { candidates } = await lookAtHead(store, { limit: 10, exclude: [] });
  // the first job's data is replaced after the head was listed, as the claim multi is on its way: here
  // the read of the records goes out ahead of the claim (the multi waits for the edit), and shows no
  // claim of this worker's: not used, the records are read again after the claim
  const multi = session.multi.bind(session);
  let staged = false;
  session.multi = (async (ops: Parameters<typeof multi>[0]) => {
    if (!staged) {
      staged = true;
      await (await bull.getJob(edited?.id as string))?.updateData({ v: 2 });
    }
    return multi(ops);
  }) as typeof session.multi;
  const got = await claimJobs(store, candidates, claimOpts);
  assert.deepEqual(
    got.claimed.map((c) => c.record.data),
    [{ v: 2 }, { v: 1, other: true }],
    'both jobs claimed, the edited one as edited',
  );
  assert.deepEqual(got.skipped, []);
});

test('a claim handed over while the connection was down has its records read again after it', async (t) => {
  const env = await queueEnv(t);
  const proxy = await TcpProxy.start(env.connection.connectionString);
  t.after(() => proxy.stop());
  const queue = new Queue('down', env);
  t.after(() => queue.close());
  await queue.addBulk(Array.from({ length: 3 }, (_, i) => ({ name: 'j', data: { i } })));
  const session = await prefixSession(t, env, proxy.connectionString);
  const store = new QueueStore(session, 'down');
  await store.init();
  const { candidates } = await lookAtHead(store, { limit: 10, exclude: [] });
  const counts = countReadsAtClaims(session, store.layout);
  // the claim and the read beside it are handed over between two connections: sent on the next one,
  // in order, but not on the connection the claim was handed to
  const suspended = nextEvent(session, 'suspended');
  proxy.cut();
  await suspended;
  const claiming = claimJobs(store, candidates, claimOpts);
  proxy.restore();
  const got = await claiming;
  assert.deepEqual(
    got.claimed.map((c) => c.record.data),
    [{ i: 0 }, { i: 1 }, { i: 2 }],
  );
  assert.equal(counts.readsAtReply.length, 1, 'one claim multi');
  assert.equal(counts.reads, 2, 'the read beside the claim is not used: the records are read again');
});
