/**
 * A claim whose reply was lost is settled by its receipt: it reads its ready
 * pointer (the token) with its claim node (still this session's), and its
 * record. The claim node is read once after the claim, in the same
 * read-only multi as the pointer and the record, not again with the record
 * (the read sent beside the claim multi, in its flight, is not used: the
 * claim's reply never came).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { claimJobs, lookAtHead, openSession, QueueStore } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { FaultProxy, request, WRITE_OPS } from '../../../helpers/fault-proxy.js';
import { queueEnv } from '../../../helpers/queue.js';

test('a claim settled by its receipt reads its claim node once, with its pointer and record', async (t) => {
  const env = await queueEnv(t);
  const proxy = await FaultProxy.start(env.connection.connectionString);
  t.after(() => proxy.stop());
  const queue = new Queue('reply-lost-reads', env);
  t.after(() => queue.close());
  await queue.add('j', {}, { jobId: 'x' });
  const session = await openSession({ ...env.connection, connectionString: proxy.connectionString }, env.prefix);
  t.after(() => session.close());
  const store = new QueueStore(session, 'reply-lost-reads');
  await store.init();
  const { candidates } = await lookAtHead(store, { limit: 10, exclude: [] });
  const claimPath = store.layout.claim('x');
  const readMulti = session.readMulti.bind(session);
  const groups: string[][] = [];
  session.readMulti = ((reads: Parameters<typeof readMulti>[0]) => {
    groups.push(reads.map((r) => r.path));
    return readMulti(reads);
  }) as typeof session.readMulti;
  const lost = proxy.loseReply(request(WRITE_OPS, '/claims/x'));
  const { claimed } = await claimJobs(store, candidates, { workerId: 'w', lockDuration: 600_000 });
  assert.ok(lost.hasFired, "the claim's reply was lost");
  assert.equal(claimed.length, 1, "the claim is this worker's, settled by its receipt");
  assert.equal(claimed[0]?.token, 1);
  const pointer = candidates[0]?.pointer as string;
  // the read in the claim's flight reads no pointer; those after the claim read it first
  const after = groups.filter((g) => g.includes(claimPath) && !(g.length === 2 && g[0] === store.layout.job('x')));
  assert.equal(after.length, 1, `the claim node read once after the claim: ${JSON.stringify(groups)}`);
  assert.deepEqual(after[0], [pointer, store.layout.job('x'), claimPath], 'with the pointer and the record');
});
