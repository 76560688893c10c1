/**
 * A queue of layout 2 (its claim's token was the record's version; layout
 * 3's is the ready pointer's) is refused by every client of layout 3 with
 * LayoutVersionError naming `zkq migrate`, before anything is written; any
 * other unknown layout keeps its own wording. Once migrated, it opens.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { LayoutVersionError, type Session } from '@zkq/core';
import { LAYOUT_VERSION, migrateQueue, QueueLayout, QueueStore } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { withBackend } from 'bullmq';
import { layoutOf, setLayout2 } from '../../../helpers/layout-2.js';
import { queueEnv } from '../../../helpers/queue.js';
import { prefixSession } from '../../../helpers/znodes.js';

const Bull = withBackend(createZooKeeperBackend);

const MIGRATE_MESSAGE =
  "queue 'old' has znode layout 2, this zkq needs layout 3: run `zkq migrate old` (no layout-2 worker may run on it)";

function isLayout2Refusal(err: unknown): boolean {
  assert.ok(err instanceof LayoutVersionError, String(err));
  assert.equal(err.code, 'ZKQ_LAYOUT_VERSION');
  assert.equal(err.found, 2);
  assert.equal(err.message, MIGRATE_MESSAGE);
  return true;
}

test("a queue of layout 2 is refused by Queue, Worker, a reader and BullMQ's Queue, naming zkq migrate; nothing is written", async (t) => {
  const env = await queueEnv(t);
  const session = (await prefixSession(t, env)) as Session;
  const maker = new Queue('old', env);
  await maker.add('a', { n: 1 });
  await maker.close();
  await setLayout2(session, 'old');
  const meta = await session.getData(new QueueLayout('old').meta);

  const queue = new Queue('old', env);
  t.after(() => queue.close());
  await assert.rejects(queue.add('b', {}), isLayout2Refusal);
  await assert.rejects(queue.getJobCounts(), isLayout2Refusal);

  const worker = new Worker('old', async () => 'ran', { ...env, autorun: false });
  t.after(() => worker.close());
  await assert.rejects(worker.run(), isLayout2Refusal);

  await assert.rejects(new QueueStore(session, 'old').attach(), isLayout2Refusal);
  const bull = new Bull.Queue('old', { connection: { ...env.connection, namespace: env.prefix } });
  t.after(() => bull.close());
  const emitted: unknown[] = [];
  bull.on('error', (err) => emitted.push(err));
  await assert.rejects(bull.add('b', {}), isLayout2Refusal);
  const after = await session.getData(new QueueLayout('old').meta);
  assert.equal(after.stat.version, meta.stat.version, 'meta untouched');
  assert.deepEqual(await session.getChildren(new QueueLayout('old').workersDir), [], 'no worker registered');

  assert.deepEqual(await migrateQueue(new QueueStore(session, 'old')), { from: 2, to: 3, jobsFixed: 0 });
  assert.equal(await layoutOf(session, 'old'), LAYOUT_VERSION);
  const reopened = new Queue('old', env);
  t.after(() => reopened.close());
  assert.equal((await reopened.getJobCounts('waiting')).waiting, 1, 'opens once migrated');
  assert.equal(await migrateQueue(new QueueStore(session, 'old')), 'current', 'a second run writes nothing');
});

test('a queue of an unknown layout keeps the drain-or-obliterate wording, and migrate refuses it too', async (t) => {
  const env = await queueEnv(t);
  const session = (await prefixSession(t, env)) as Session;
  await new QueueStore(session, 'odd').init();
  const layout = new QueueLayout('odd');
  await session.setData(layout.meta, Buffer.from(JSON.stringify({ layout: 7, paused: false })));
  const expected =
    "queue 'odd' has znode layout 7, this zkq needs layout 3: drain it with the zkq that made it, or obliterate it";
  const refused = (err: unknown) => {
    assert.ok(err instanceof LayoutVersionError);
    assert.equal(err.message, expected);
    return true;
  };
  await assert.rejects(new QueueStore(session, 'odd').attach(), refused);
  await assert.rejects(migrateQueue(new QueueStore(session, 'odd')), refused);
  const meta = JSON.parse((await session.getData(layout.meta)).data.toString());
  assert.equal(meta.layout, 7, 'left as it was');
});

test('a new queue is made with layout 3 and its pause flag', async (t) => {
  const env = await queueEnv(t);
  const session = (await prefixSession(t, env)) as Session;
  await new QueueStore(session, 'fresh').init();
  assert.deepEqual(JSON.parse((await session.getData(new QueueLayout('fresh').meta)).data.toString()), {
    layout: 3,
    paused: false,
  });
});
