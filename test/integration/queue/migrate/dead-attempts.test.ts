/**
 * Jobs whose layout-2 worker died mid-attempt: their records still say
 * `active`, with no claim. Layout 2 counted that stall at the next claim;
 * layout 3's claim does not read the record first, so the migration counts
 * it: `waiting`, `stalledCounter + 1`. A migration stopped half-way runs
 * again and fixes each record once.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Session } from '@zkq/core';
import { decodeRecord, migrateQueue, QueueLayout, QueueStore } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { layoutOf, leaveActive, setLayout2 } from '../../../helpers/layout-2.js';
import { queueEnv } from '../../../helpers/queue.js';
import { waitFor } from '../../../helpers/zk.js';
import { prefixSession } from '../../../helpers/znodes.js';

async function recordOf(session: Session, queue: string, id: string) {
  const path = new QueueLayout(queue).job(id);
  return decodeRecord((await session.getData(path)).data, path);
}

test('a job left active by a dead layout-2 worker is waiting after migration, one stall counted, and runs once', async (t) => {
  const env = await queueEnv(t);
  const session = (await prefixSession(t, env)) as Session;
  const maker = new Queue('dead', env);
  const jobs = await maker.addBulk(Array.from({ length: 6 }, (_, n) => ({ name: 'j', data: { n } })));
  await maker.close();
  const once = jobs[2]!.id;
  await leaveActive(session, 'dead', [once]);
  await setLayout2(session, 'dead');

  const result = await migrateQueue(new QueueStore(session, 'dead'));
  assert.deepEqual(result, { from: 2, to: 3, jobsFixed: 1 });
  const fixed = await recordOf(session, 'dead', once);
  assert.equal(fixed.state, 'waiting');
  assert.equal(fixed.stalledCounter, 1);
  assert.equal(fixed.attemptsStarted, 1, 'the dead attempt was counted by its claim');

  const queue = new Queue('dead', env);
  t.after(() => queue.close());
  const runs = new Map<string, number>();
  const worker = new Worker(
    'dead',
    async (job) => {
      runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
      return job.data.n;
    },
    { ...env, concurrency: 2 },
  );
  t.after(() => worker.close());
  await waitFor(async () => (await queue.getJobCounts('completed')).completed === 6, { what: 'six completed' });
  assert.deepEqual(
    [...runs.values()],
    jobs.map(() => 1),
  );
  const done = await queue.getJob(once);
  assert.equal(done?.stalledCounter, 1);
  assert.equal(done?.attemptsStarted, 2);
  assert.equal(done?.returnvalue, 2);
  for (const job of jobs.filter((j) => j.id !== once)) assert.equal((await queue.getJob(job.id))?.stalledCounter, 0);
});

test('a migration stopped after its first batch runs again and fixes each record once', async (t) => {
  const env = await queueEnv(t);
  const session = (await prefixSession(t, env)) as Session;
  const maker = new Queue('halfway', env);
  const jobs = await maker.addBulk(
    Array.from({ length: 40 }, (_, n) => ({ name: 'j', data: { n }, opts: n % 10 === 0 ? { priority: 3 } : {} })),
  );
  await maker.close();
  const active = jobs.filter((_, n) => n % 2 === 0).map((j) => j.id);
  await leaveActive(session, 'halfway', active);
  await setLayout2(session, 'halfway');

  const crash = new Error('stopped after the first batch');
  let seen: readonly string[] = [];
  await assert.rejects(
    migrateQueue(new QueueStore(session, 'halfway'), {
      batch: 8,
      onProgress: (fixed) => {
        seen = fixed;
        throw crash;
      },
    }),
    (err) => err === crash,
  );
  assert.ok(seen.length > 0 && seen.length < active.length, `fixed ${seen.length} of ${active.length} first`);
  assert.equal(await layoutOf(session, 'halfway'), 2, 'meta still says layout 2: every client still refuses it');
  for (const id of seen) assert.equal((await recordOf(session, 'halfway', id)).stalledCounter, 1);

  const again = await migrateQueue(new QueueStore(session, 'halfway'), { batch: 8 });
  assert.deepEqual(again, { from: 2, to: 3, jobsFixed: active.length - seen.length });
  for (const job of jobs) {
    const record = await recordOf(session, 'halfway', job.id);
    assert.equal(record.state, 'waiting', job.id);
    assert.equal(record.stalledCounter, active.includes(job.id) ? 1 : 0, `job ${job.id} counted once`);
  }
  assert.equal(await migrateQueue(new QueueStore(session, 'halfway')), 'current');
});
