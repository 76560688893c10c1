/**
 * The batch-start barrier of workers (`barrier: { name, size }`, what
 * `zkq worker --barrier nightly --members 2` sets) under one name night
 * after night: each night's batch waits for all its members. A second
 * night's first worker once passed alone, the first night's release still
 * standing, and ran jobs meant for the whole batch.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../../helpers/queue.js';
import { testSession, waitFor } from '../../../helpers/zk.js';

const QUEUE = 'nightly-q';
const barrier = { name: 'nightly', size: 2 } as const;

test('worker barrier: a second batch under the same name waits for all its members', async (t) => {
  const env = await queueEnv(t);
  const look = await testSession(t, { namespace: `/${env.prefix}` });
  const queue = new Queue(QUEUE, env);
  t.after(() => queue.close());
  const started: string[] = [];
  const passed: string[] = [];
  const start = (name: string) => {
    const worker = new Worker(QUEUE, async (job) => void started.push(`${name}:${job.data.night}`), {
      ...env,
      name,
      barrier,
      drainDelay: 1,
    });
    worker.on('barrierPassed', () => passed.push(name));
    t.after(() => worker.close(true));
    return worker;
  };
  const members = async () =>
    (await look.getChildren(`/${QUEUE}/barriers/nightly`).catch(() => [] as string[])).filter((n) =>
      n.startsWith('member-'),
    );

  // night 1
  const night1 = [start('a1'), start('a2')];
  await waitFor(() => passed.length === 2, { what: 'night 1 started' });
  await queue.add('job', { night: 1 });
  await waitFor(() => started.length === 1, { what: 'the night 1 job' });
  await Promise.all(night1.map((w) => w.close()));
  await waitFor(async () => (await members()).length === 0, { what: 'night 1 gone' });

  // night 2: the first worker waits alone, its jobs untouched
  await queue.add('job', { night: 2 });
  start('b1');
  await waitFor(async () => (await members()).length === 1, { what: 'the first of night 2 at the barrier' });
  await sleep(1000); // it would have passed by now (night 1 passed within milliseconds)
  assert.equal(passed.length, 2, `a lone worker of night 2 passed the barrier: ${passed.join(', ')}`);
  assert.equal(started.length, 1, 'a lone worker of night 2 ran a job');
  start('b2');
  await waitFor(() => passed.length === 4, { what: 'night 2 started' });
  await waitFor(() => started.length === 2, { what: 'the night 2 job' });
  assert.match(started[1] ?? '', /^b[12]:2$/);
});
