/**
 * Test helpers: two workers racing for job `x` of one queue, a claim of
 * which the first is about to release or remove while it is revoked by
 * hand, or the second claims the job added again under its id.
 */

import assert from 'node:assert/strict';
import {
  claimJobs,
  claimOps,
  claimPayload,
  lookAtHead,
  type QueueLayout,
  QueueStore,
  type Session,
} from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { type QueueTestEnv, queueEnv } from './queue.js';
import { expire } from './zk.js';
import { prefixSession } from './znodes.js';

/** Job `x` (a custom id) in queue `name`; `mine` is the session of the worker under test (`store`), `other` another's. */
export async function twoWorkers(t: { after(fn: () => unknown): void; name?: string }, name: string) {
  const env: QueueTestEnv = await queueEnv(t);
  const queue = new Queue(name, env);
  t.after(() => queue.close());
  await queue.add('j', {}, { jobId: 'x' });
  const [mine, other] = [await prefixSession(t, env), await prefixSession(t, env)];
  const store = new QueueStore(mine, name);
  await store.init();
  return { env, queue, mine, other, store, layout: store.layout };
}

/**
 * Job `x` claimed through `store` (on `mine`) with `opts`, then `mine`'s session expired: the claim
 * vanishes with it, the pointer stays at the token. Returns the claimed job.
 */
export async function claimedThenExpired(store: QueueStore, mine: Session, opts: Parameters<typeof claimJobs>[2]) {
  const { candidates } = await lookAtHead(store, { limit: 10, exclude: [] });
  const {
    claimed: [job],
  } = await claimJobs(store, candidates, opts);
  assert.ok(job);
  await expire(mine);
  return job;
}

/** Job `x` added again under its id, and claimed by `other` as worker `other` on its new pointer (not `old`). */
export async function readdedAndClaimed(
  queue: Queue,
  other: Session,
  layout: QueueLayout,
  old?: string,
): Promise<void> {
  await queue.add('j', {}, { jobId: 'x' });
  const { candidates } = await lookAtHead(new QueueStore(other, queue.name), { limit: 10, exclude: [] });
  const next = candidates.find((c) => c.pointer !== old);
  assert.ok(next, 'the job added again has a pointer of its own');
  const claim = claimPayload({ worker: 'other', pointer: next.pointer, lockDuration: 600_000, at: Date.now() });
  await other.multi(claimOps(layout, { id: 'x', pointer: next.pointer, claim }));
}

/**
 * The leader's revocation of job `x`'s claim on `pointer`, made by hand
 * from `other`: the claim deleted at the version a fresh claim has, the
 * pointer written at its token (the old holder's later writes fail).
 */
export async function revokeX(other: Session, layout: QueueLayout, pointer: string): Promise<void> {
  const stat = await other.exists(pointer);
  assert.ok(stat, 'the pointer is there to revoke at');
  await other.multi([
    { op: 'delete', path: layout.claim('x'), version: 0 },
    { op: 'setData', path: pointer, data: Buffer.alloc(0), version: stat.version },
  ]);
}

/** The claim node of job `x` is still `other`'s. */
export async function otherHoldsX(other: Session, layout: QueueLayout): Promise<void> {
  const held = await other.exists(layout.claim('x'));
  assert.ok(held, "the other worker's claim node is there still");
  assert.equal(held.ephemeralOwner, other.sessionId);
}
