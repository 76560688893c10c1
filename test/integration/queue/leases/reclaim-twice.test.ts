/**
 * A claim that vanished with an expired session is re-created while its
 * token holds. The re-creation is a create, which is not safe to send twice:
 * two renewals of the same lease in flight at once (the renewer's tick and
 * the renewal after a new session, a progress report, the proof before a
 * processor starts), or one renewal sent again after its reply was lost, find
 * the claim already there. That claim is this attempt's own (a claim by
 * anyone else writes the record, which moves the token on): the lease holds.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConnectionLossError } from '@zkq/core';
import {
  type ClaimedJob,
  claimJobs,
  type Lease,
  leaseOf,
  lookAtHead,
  QueueStore,
  renewLeases,
} from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { workerStore } from '../../../../packages/worker/src/internals.ts';
import { queueEnv } from '../../../helpers/queue.js';
import { expire, waitFor } from '../../../helpers/zk.js';
import { prefixSession } from '../../../helpers/znodes.js';

const OPTS = { workerId: 'w', lockDuration: 60_000 };

/** Three jobs claimed on a session of their own, whose session is then expired (the claims vanish). */
async function claimedThenExpired(t: { after(fn: () => unknown): void; name?: string }) {
  const env = await queueEnv(t);
  const queue = new Queue('q', env);
  t.after(() => queue.close());
  await queue.addBulk([0, 1, 2].map((i) => ({ name: `j${i}`, data: {} })));
  const session = await prefixSession(t, env);
  const store = new QueueStore(session, 'q');
  await store.init();
  const { candidates } = await lookAtHead(store, { limit: 10, exclude: [] });
  const { claimed } = await claimJobs(store, candidates, OPTS);
  assert.equal(claimed.length, 3);
  const leases = claimed.map((c: ClaimedJob) => leaseOf(c));
  await expire(session);
  for (const l of leases) assert.equal(await session.exists(store.layout.claim(l.id)), null, 'claim vanished');
  return { store, session, leases };
}

async function claimsHeld(store: QueueStore, leases: Lease[]): Promise<void> {
  for (const l of leases) {
    const stat = await store.session.exists(store.layout.claim(l.id));
    assert.ok(stat, `claim of ${l.id} re-created`);
    assert.equal(stat.ephemeralOwner, store.session.sessionId, 'owned by the new session');
  }
}

test('two renewals of the same vanished claims at once: both hold every lease', async (t) => {
  const { store, leases } = await claimedThenExpired(t);
  const [a, b] = await Promise.all([renewLeases(store, leases, OPTS), renewLeases(store, leases, OPTS)]);
  assert.deepEqual(a, []);
  assert.deepEqual(b, []);
  await claimsHeld(store, leases);
});

test('a re-claim applied but its reply lost: sent again, the lease holds', async (t) => {
  const { store, session, leases } = await claimedThenExpired(t);
  const multi = session.multi.bind(session);
  let lostReplies = 0;
  session.multi = (async (ops: Parameters<typeof multi>[0]) => {
    const results = await multi(ops);
    if (lostReplies === 0 && ops.some((op) => op.op === 'create' && op.path.includes('/claims/'))) {
      lostReplies++;
      throw new ConnectionLossError();
    }
    return results;
  }) as typeof session.multi;
  assert.deepEqual(await renewLeases(store, leases, OPTS), []);
  assert.equal(lostReplies, 1);
  await claimsHeld(store, leases);
});

test("a new session while the renewer's renewal runs: the renewals never overlap, no attempt is lost", async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('q', env);
  t.after(() => queue.close());
  let release = false;
  const started: string[] = [];
  const lost: string[] = [];
  const completed: string[] = [];
  const worker = new Worker(
    'q',
    async (job) => {
      started.push(job.id as string);
      await waitFor(() => release, { what: 'release', timeoutMs: 30_000 });
      return 'ok';
    },
    { ...env, concurrency: 3, lockDuration: 2000, lockRenewTime: 10, housekeeping: false },
  );
  worker.on('lost', (job) => lost.push(job.id as string));
  worker.on('completed', (job) => completed.push(job.id as string));
  t.after(() => worker.close());
  await queue.addBulk([0, 1, 2].map((i) => ({ name: `j${i}`, data: {} })));
  await waitFor(() => started.length === 3, { what: 'all started' });
  const session = await worker.client;
  const store = workerStore(worker) as QueueStore;
  // the renewer's next renewal waits until the new session is announced (and handled), then runs
  let hold = true;
  let held = 0;
  let renewing = 0;
  let overlapping = 0;
  const announced = new Promise<void>((resolve) => session.once('reconnected', () => setImmediate(() => resolve())));
  const run = store.executor.run.bind(store.executor);
  store.executor.run = (async (units: Parameters<typeof run>[0], o?: Parameters<typeof run>[1]) => {
    if (!units.some((u) => 'lease' in u)) return run(units, o);
    if (++renewing > 1) overlapping++;
    try {
      if (hold) {
        hold = false;
        held++;
        await announced;
      }
      return await run(units, o);
    } finally {
      renewing--;
    }
  }) as typeof run;
  await waitFor(() => held === 1, { what: 'a renewal held' });
  await expire(session);
  await announced;
  await new Promise((r) => setTimeout(r, 500));
  release = true;
  await waitFor(() => completed.length + lost.length >= 3, { what: 'settled', timeoutMs: 15_000 });
  assert.equal(overlapping, 0, 'no renewal ran beside another');
  assert.deepEqual(lost, []);
  assert.equal(completed.length, 3);
});
