/**
 * The leader revokes the attempt it judged stale, never the one after it. A
 * job given back in place (a RateLimitError) keeps its ready pointer, and the
 * next claim's node starts at version 0 again, as the judged one did: a
 * revocation sent after that judgment must fail, not fence the new attempt
 * and count a stall for it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { QueueStore, revokeClaims } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../../helpers/queue.js';
import { waitFor } from '../../../helpers/zk.js';

test('a revocation judged on an attempt given back in place does not revoke the next claim of the job', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('revoke-judged', env);
  t.after(() => queue.close());
  const store = new QueueStore(await queue.client, 'revoke-judged');
  const job = await queue.add('x', {});
  const id = job.id as string;
  let judged: { id: string; version: number; czxid: number; pointer: string } | undefined;
  let release!: () => void;
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  let started = false;
  const worker = new Worker(
    'revoke-judged',
    async () => {
      if (judged === undefined) {
        // the leader's judgment of this attempt, taken by hand: unrenewed at this version
        const claim = await store.session.getData(store.layout.claim(id));
        const { pointer } = JSON.parse(claim.data.toString()) as { pointer: string };
        judged = { id, version: claim.stat.version, czxid: claim.stat.czxid, pointer };
        throw Worker.RateLimitError();
      }
      started = true;
      await held;
      return 'second';
    },
    { ...env, housekeeping: false, lockDuration: 60_000 },
  );
  const lost: string[] = [];
  worker.on('lost', (j) => lost.push(j.id));
  t.after(() => worker.close());
  await waitFor(() => started, { what: 'the next attempt started' });
  try {
    assert.deepEqual(await revokeClaims(store, [judged as NonNullable<typeof judged>], () => []), []);
  } finally {
    release();
  }
  await waitFor(async () => (await queue.getJobState(id)) === 'completed', { what: 'the job completed' });
  const stored = await queue.getJob(id);
  assert.equal(stored?.returnvalue, 'second');
  assert.equal(stored?.stalledCounter, 0);
  assert.deepEqual(lost, []);
});
