/**
 * close(true) must not wait for a processor that ignores its abort signal:
 * otherwise the session stays open, the claim never ends, and the job is
 * held until its lease runs out.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../../helpers/queue.js';
import { waitFor } from '../../../helpers/zk.js';

test('close(true) returns although the processor ignores its signal', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('stubborn', env);
  t.after(() => queue.close());
  const started: string[] = [];
  let release!: () => void;
  const never = new Promise<void>((r) => {
    release = r;
  });
  t.after(() => release());
  const w = new Worker(
    'stubborn',
    async (job) => {
      started.push(job.id);
      await never;
    },
    { ...env, drainDelay: 600, housekeeping: false },
  );
  w.on('error', () => undefined);
  await w.waitUntilReady();
  const job = await queue.add('j', {});
  await waitFor(() => started.includes(job.id), { what: 'the attempt' });
  const closed = await Promise.race([w.close(true).then(() => true), sleep(10_000, false, { ref: false })]);
  assert.ok(closed, 'close(true) still pending 10 s later');
});
