/**
 * A migration waits for the queue's layout-2 writers to be gone: a worker
 * registered (`workers/`) or a job claimed (`claims/`: a live layout-2
 * attempt, or a dead worker's claim until its session expires) refuses it
 * with MigrationRefusedError, writing nothing; with `wait` it goes on once
 * both are gone, and times out with TimeoutError while they stay.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MigrationRefusedError, type Session, TimeoutError } from '@zkq/core';
import { migrateQueue, QueueLayout, QueueStore } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { layoutOf, leaveActive, setLayout2 } from '../../../helpers/layout-2.js';
import { queueEnv } from '../../../helpers/queue.js';
import { expire, waitFor } from '../../../helpers/zk.js';
import { prefixSession } from '../../../helpers/znodes.js';

async function layout2Queue(t: Parameters<typeof queueEnv>[0], name: string) {
  const env = await queueEnv(t);
  const session = (await prefixSession(t as never, env)) as Session;
  const maker = new Queue(name, env);
  const jobs = await maker.addBulk([{ name: 'a', data: {} }]);
  await maker.close();
  await setLayout2(session, name);
  return { env, session, layout: new QueueLayout(name), id: jobs[0]!.id };
}

test('refused while a layout-2 worker is registered, naming it; migrated once it is gone', async (t) => {
  const { env, session, layout } = await layout2Queue(t, 'busy');
  // a live layout-2 worker's registration, on its own session (a layout-3 Worker refuses the queue)
  const old = (await prefixSession(t as never, env)) as Session;
  await old.create(layout.worker('host-1'), Buffer.from('{}'), 'ephemeral');
  await assert.rejects(migrateQueue(new QueueStore(session, 'busy')), (err) => {
    assert.ok(err instanceof MigrationRefusedError);
    assert.equal(err.code, 'ZKQ_MIGRATION_REFUSED');
    assert.equal(err.workers, 1);
    assert.equal(err.claims, 0);
    assert.match(err.message, /^queue 'busy' was not migrated: 1 worker registered \(stop its workers first/);
    return true;
  });
  assert.equal(await layoutOf(session, 'busy'), 2, 'nothing written');
  await old.close(); // the worker stops: its ephemeral registration goes with its session
  assert.deepEqual(await migrateQueue(new QueueStore(session, 'busy')), { from: 2, to: 3, jobsFixed: 0 });
  assert.deepEqual(JSON.parse((await session.getData(layout.meta)).data.toString()), { layout: 3, paused: false });
});

test("refused while a job is claimed (a dead worker's claim until its session expires); --wait goes on once it expires", async (t) => {
  const { env, session, layout, id } = await layout2Queue(t, 'claimed');
  const dead = (await prefixSession(t as never, env)) as Session;
  await dead.create(layout.claim(id), Buffer.from('{"worker":"gone"}'), 'ephemeral');
  await dead.create(layout.worker('gone'), Buffer.from('{}'), 'ephemeral');
  await assert.rejects(migrateQueue(new QueueStore(session, 'claimed')), (err) => {
    assert.ok(err instanceof MigrationRefusedError);
    assert.deepEqual([err.workers, err.claims], [1, 1]);
    assert.match(err.message, /1 worker registered and 1 job claimed/);
    return true;
  });
  let settled = false;
  const waiting = migrateQueue(new QueueStore(session, 'claimed'), { wait: true, timeoutMs: 60_000 }).finally(() => {
    settled = true;
  });
  // still waiting while the claim is there (checked once the wait has listed it)
  await waitFor(async () => (await session.getChildren(layout.claimsDir)).length === 1);
  assert.equal(settled, false);
  assert.equal(await layoutOf(session, 'claimed'), 2);
  await expire(dead); // its session expires: the claim and the registration go
  assert.deepEqual(await waiting, { from: 2, to: 3, jobsFixed: 0 });
  assert.equal(await layoutOf(session, 'claimed'), 3);
});

test('a wait that outlasts its timeout ends with TimeoutError, writing nothing', async (t) => {
  const { env, session, layout, id } = await layout2Queue(t, 'stays');
  const holder = (await prefixSession(t as never, env)) as Session;
  await holder.create(layout.claim(id), Buffer.from('{"worker":"w"}'), 'ephemeral');
  await assert.rejects(migrateQueue(new QueueStore(session, 'stays'), { wait: true, timeoutMs: 300 }), (err) => {
    assert.ok(err instanceof TimeoutError, String(err));
    assert.equal(err.code, 'ZKQ_TIMEOUT');
    assert.match(err.message, /waiting to migrate queue 'stays' \(1 job claimed\) timed out after 300 ms/);
    return true;
  });
  assert.equal(await layoutOf(session, 'stays'), 2);
});

test('a paused queue stays paused once migrated', async (t) => {
  const { session, layout } = await layout2Queue(t, 'flag');
  await session.setData(layout.meta, Buffer.from(JSON.stringify({ layout: 2, paused: true })));
  await migrateQueue(new QueueStore(session, 'flag'));
  assert.deepEqual(JSON.parse((await session.getData(layout.meta)).data.toString()), { layout: 3, paused: true });
});

test('a claim made and gone while the records are walked makes it walk again; one that stays refuses it', async (t) => {
  const env = await queueEnv(t);
  const session = (await prefixSession(t as never, env)) as Session;
  const maker = new Queue('racing', env);
  const jobs = await maker.addBulk(Array.from({ length: 4 }, (_, n) => ({ name: 'a', data: { n } })));
  await maker.close();
  await leaveActive(session, 'racing', [jobs[0]!.id]);
  await setLayout2(session, 'racing');
  const layout = new QueueLayout('racing');
  const other = (await prefixSession(t as never, env)) as Session;

  // a layout-2 worker, started meanwhile, claims a job and finishes it during the walk
  let walks = 0;
  const came = await migrateQueue(new QueueStore(session, 'racing'), {
    onProgress: async () => {
      if (++walks > 1) return;
      await other.create(layout.claim(jobs[1]!.id), Buffer.from('{}'), 'ephemeral');
      await other.delete(layout.claim(jobs[1]!.id));
    },
  });
  assert.deepEqual(came, { from: 2, to: 3, jobsFixed: 1 });
  assert.equal(walks, 2, 'walked again');

  // one that stays: refused, nothing more written
  await setLayout2(session, 'racing');
  await leaveActive(session, 'racing', [jobs[2]!.id]);
  await assert.rejects(
    migrateQueue(new QueueStore(session, 'racing'), {
      onProgress: () => other.create(layout.claim(jobs[3]!.id), Buffer.from('{}'), 'ephemeral').then(() => undefined),
    }),
    (err) => err instanceof MigrationRefusedError && err.claims === 1,
  );
  assert.equal(await layoutOf(session, 'racing'), 2);
});
