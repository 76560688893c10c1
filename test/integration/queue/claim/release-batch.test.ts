/**
 * Claims of a batch found not claimable (their records gone) are released
 * together: their nodes read in one request, their deletes sent in one
 * run. One of them revoked and claimed by another worker between that read
 * and the deletes fails its own delete (its pointer moved on) and only its
 * own: nothing of the multi is applied, the others are sent again without
 * it and released, and the other worker's claim stays.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { claimJobs, claimOps, claimPayload, lookAtHead, QueueStore } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { queueEnv } from '../../../helpers/queue.js';
import { prefixSession } from '../../../helpers/znodes.js';

test("a release batch with one claim revoked and taken since releases the others, and leaves that one's taker", async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('release-batch', env);
  t.after(() => queue.close());
  for (const id of ['x', 'y', 'z']) await queue.add('j', {}, { jobId: id });
  const [mine, other] = [await prefixSession(t, env), await prefixSession(t, env)];
  const store = new QueueStore(mine, 'release-batch');
  await store.init();
  const { layout } = store;
  for (const id of ['x', 'y', 'z']) await other.delete(layout.job(id)); // the pointers stay, the records go
  const { candidates } = await lookAtHead(store, { limit: 10, exclude: [] });
  assert.equal(candidates.length, 3);
  const y = candidates.find((c) => c.id === 'y');
  assert.ok(y);

  // right after the release's read of the three claim nodes, y's claim is revoked (its pointer written at
  // its token) and another worker claims y (its pointer written again)
  const readMulti = mine.readMulti.bind(mine);
  let staged = false;
  mine.readMulti = (async (reads: Parameters<typeof readMulti>[0]) => {
    const replies = await readMulti(reads);
    const release = reads.length === 3 && reads.every((r) => r.path.startsWith(`${layout.claimsDir}/`));
    if (release && !staged) {
      staged = true;
      const pointer = await other.exists(y.pointer);
      assert.ok(pointer);
      await other.multi([
        { op: 'delete', path: layout.claim('y'), version: 0 },
        { op: 'setData', path: y.pointer, data: Buffer.alloc(0), version: pointer.version },
      ]);
      const claim = claimPayload({ worker: 'other', pointer: y.pointer, lockDuration: 600_000, at: Date.now() });
      await other.multi(claimOps(layout, { id: 'y', pointer: y.pointer, claim }));
    }
    return replies;
  }) as typeof mine.readMulti;

  // the claim nodes each release multi deletes
  const releases: string[][] = [];
  const multi = mine.multi.bind(mine);
  mine.multi = (async (ops: Parameters<typeof multi>[0]) => {
    const deleted = ops.filter((op) => op.op === 'delete' && op.path.startsWith(`${layout.claimsDir}/`));
    if (deleted.length > 0) releases.push(deleted.map((op) => op.path.slice(layout.claimsDir.length + 1)).sort());
    return multi(ops);
  }) as typeof mine.multi;

  const result = await claimJobs(store, candidates, { workerId: 'mine', lockDuration: 600_000 });
  assert.deepEqual(result.claimed, []);
  assert.equal(result.skipped.length, 3);
  assert.ok(staged, 'the release read its three claim nodes');
  assert.deepEqual(
    releases,
    [
      ['x', 'y', 'z'],
      ['x', 'z'],
    ],
    'one multi failed on y, sent again without it',
  );
  for (const id of ['x', 'z']) assert.equal(await other.exists(layout.claim(id)), null, `${id}'s claim released`);
  const held = await other.exists(layout.claim('y'));
  assert.ok(held, "the other worker's claim of y is there still");
  assert.equal(held.ephemeralOwner, other.sessionId);
});
