/**
 * Claims from several stores (each its own session) racing for the same
 * head, every store taking whole batches from the front: each job is
 * claimed exactly once, every job is claimed, and no collision comes back
 * as an error.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Session } from '@zkq/core';
import { claimJobs, lookAtHead, QueueStore } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { FaultProxy, OP } from '../../../helpers/fault-proxy.js';
import { queueEnv } from '../../../helpers/queue.js';
import { prefixSession } from '../../../helpers/znodes.js';

const JOBS = 300;
const STORES = 4;

test('claim batches of several stores racing for the head: each job claimed once, none left', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('race', env);
  t.after(() => queue.close());
  await queue.addBulk(Array.from({ length: JOBS }, (_, i) => ({ name: 'j', data: i })));
  const stores = await Promise.all(
    Array.from({ length: STORES }, async () => {
      const s = new QueueStore((await prefixSession(t, env)) as Session, 'race');
      await s.init();
      return s;
    }),
  );
  const claimed: string[] = [];
  const errors: unknown[] = [];
  await Promise.all(
    stores.map(async (store, w) => {
      const mine = new Set<string>();
      for (let round = 0; round < 200; round++) {
        const { candidates } = await lookAtHead(store, { limit: 200, exclude: [...mine] });
        if (candidates.length === 0) return;
        const got = await claimJobs(store, candidates.slice(0, 25), { workerId: `w${w}`, lockDuration: 600_000 });
        for (const c of got.claimed) {
          mine.add(c.record.id);
          claimed.push(c.record.id);
        }
        for (const s of got.skipped) if (s.error !== undefined) errors.push(s.error);
      }
    }),
  );
  assert.deepEqual(errors, [], 'collisions are not errors');
  assert.equal(new Set(claimed).size, claimed.length, 'no job claimed twice');
  assert.equal(claimed.length, JOBS, 'every job claimed');
});

test('a claim batch whose check after a collision is cut: each job claimed once, the rest claimed', async (t) => {
  const env = await queueEnv(t, 6000);
  const queue = new Queue('cut', env);
  t.after(() => queue.close());
  await queue.addBulk(Array.from({ length: 20 }, (_, i) => ({ name: 'j', data: i })));
  const proxy = await FaultProxy.start(env.connection.connectionString);
  const sa = await Session.connect({
    connectionString: proxy.connectionString,
    sessionTimeout: 6000,
    namespace: `/${env.prefix}`,
  });
  t.after(async () => {
    await sa.close();
    await proxy.stop();
  });
  const sb = await prefixSession(t, env);
  const a = new QueueStore(sa, 'cut');
  const b = new QueueStore(sb as Session, 'cut');
  await Promise.all([a.init(), b.init()]);
  const { candidates } = await lookAtHead(a, { limit: 100, exclude: [] });
  assert.equal(candidates.length, 20);

  // b takes every other job right before a's claim is sent
  const multi = sa.multi.bind(sa);
  let staged = false;
  let taken: string[] = [];
  sa.multi = (async (ops: Parameters<typeof multi>[0]) => {
    if (!staged) {
      staged = true;
      const got = await claimJobs(
        b,
        candidates.filter((_, i) => i % 2 === 1),
        { workerId: 'b', lockDuration: 600_000 },
      );
      taken = got.claimed.map((c) => c.record.id);
    }
    return multi(ops);
  }) as typeof sa.multi;
  // the read after a's first multi (the check of the rest of the batch) never reaches the server
  let multis = 0;
  const cut = proxy.cutBefore((r) => {
    if (r.op === OP.multi) multis++;
    return r.op === OP.multiRead && multis === 1;
  }, 300);

  const got = await claimJobs(a, candidates, { workerId: 'a', lockDuration: 600_000 });
  assert.ok(cut.hasFired, 'the check was cut');
  const mine = got.claimed.map((c) => c.record.id);
  assert.equal(taken.length, 10);
  assert.deepEqual([...mine, ...taken].sort(), candidates.map((c) => c.id).sort(), 'each job claimed once');
  assert.ok(
    got.skipped.every((s) => s.error === undefined),
    'the jobs taken are collisions, not errors',
  );
});

test('a claim batch meeting claims, removals and rewrites since the head was read: no error, nothing claimed twice', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('mixed', env);
  t.after(() => queue.close());
  await queue.addBulk(Array.from({ length: 30 }, (_, i) => ({ name: 'j', data: i })));
  const [sa, sb] = await Promise.all([prefixSession(t, env), prefixSession(t, env)]);
  const a = new QueueStore(sa as Session, 'mixed');
  const b = new QueueStore(sb as Session, 'mixed');
  await Promise.all([a.init(), b.init()]);
  const { candidates } = await lookAtHead(a, { limit: 100, exclude: [] });
  const multi = sa.multi.bind(sa);
  let staged = false;
  let taken: string[] = [];
  const removed: string[] = [];
  const rewritten: string[] = [];
  sa.multi = (async (ops: Parameters<typeof multi>[0]) => {
    if (!staged) {
      staged = true;
      const got = await claimJobs(
        b,
        candidates.filter((_, i) => i % 3 === 1),
        { workerId: 'b', lockDuration: 600_000 },
      );
      taken = got.claimed.map((c) => c.record.id);
      for (const [i, c] of candidates.entries()) {
        if (i % 3 !== 2) continue;
        if (i % 2 === 0) {
          await queue.remove(c.id);
          removed.push(c.id);
        } else {
          // a rewrite of a waiting job's record (its data updated)
          const path = b.layout.job(c.id);
          const { data, stat } = await (sb as Session).getData(path);
          await (sb as Session).setData(path, data, stat.version);
          rewritten.push(c.id);
        }
      }
    }
    return multi(ops);
  }) as typeof sa.multi;
  const got = await claimJobs(a, candidates, { workerId: 'a', lockDuration: 600_000 });
  const mine = got.claimed.map((c) => c.record.id);
  assert.ok(
    got.skipped.every((s) => s.error === undefined),
    'what others did first is a collision, not an error',
  );
  assert.equal(new Set([...mine, ...taken]).size, mine.length + taken.length, 'no job claimed twice');
  // a claim reads nothing first: a record rewritten before it is claimed as it is now
  assert.deepEqual(
    mine.sort(),
    candidates
      .filter((c, i) => i % 3 === 0 || rewritten.includes(c.id))
      .map((c) => c.id)
      .sort(),
    'a claims every job nobody took or removed',
  );
  for (const c of got.claimed) {
    const stored = await a.getJob(c.record.id);
    assert.equal(c.version, stored?.version, 'the attempt holds the record as it is, rewrites included');
  }
  const again = await lookAtHead(a, { limit: 100, exclude: mine });
  assert.deepEqual(again.candidates, [], 'nothing left to claim');
  assert.ok(removed.length > 0 && rewritten.length > 0);
});
