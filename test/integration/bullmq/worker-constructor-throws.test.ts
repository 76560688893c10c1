/**
 * A BullMQ Worker whose constructor throws (bad options) has made its
 * backend already; nothing of it may run on. Its backend stood for the
 * queue's election at once, so a later obliterate met its leader node made
 * again round after round and gave up ("keeps being written to"). A
 * Worker's housekeeping now starts with its run, as BullMQ's maintenance does.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { Session } from '@zkq/core';
import { QueueLayout } from '@zkq/core/internal';
import { withBackend } from 'bullmq';
import { spawnFixture } from '../../helpers/process.js';
import { bullEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

const { Worker } = withBackend(createZooKeeperBackend);

/** Queues tried: the election's race with the obliterate is lost only now and then. */
const TRIES = 20;

test('a Worker whose constructor throws leaves nothing that writes the queue again: obliterate succeeds', async (t) => {
  const { env } = await bullEnv(t);
  const file = fileURLToPath(new URL('../../fixtures/bullmq/constructor-throws.ts', import.meta.url));
  const child = spawnFixture(file, [
    JSON.stringify({ connectionString: env.connection.connectionString, prefix: env.prefix, tries: TRIES }),
  ]);
  // its sessions stay open (nothing can close a backend whose Worker threw): it is ended here
  t.after(() => {
    if (child.child.exitCode === null) child.child.kill('SIGKILL');
  });
  await child.waitForLine(/^done$/, 120_000);
  const outcomes = child.lines.filter((l) => /^(obliterated|failed|constructed) /.test(l));
  assert.deepEqual(
    outcomes,
    Array.from({ length: TRIES }, (_, i) => `obliterated ${i}`),
  );
});

test('a Worker that runs stands for the election (its housekeeping started with its run)', async (t) => {
  const { connection, env } = await bullEnv(t);
  const worker = new Worker('runs', async () => 1, { connection });
  t.after(() => worker.close());
  await worker.waitUntilReady();
  const observer = await Session.connect({
    connectionString: env.connection.connectionString,
    namespace: `/${env.prefix}`,
  });
  t.after(() => observer.close());
  const leader = `${new QueueLayout('runs').root}/leader`;
  await waitFor(async () => (await observer.getChildren(leader).catch(() => [])).length > 0, {
    what: 'the running Worker in the election',
  });
});
