/**
 * Due times are on ZooKeeper's clock: a producer whose clock runs seconds
 * behind still delays its job by what it asked, through zkq's Queue and
 * through BullMQ's on the ZooKeeper backend.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Worker } from '@zkq/worker';
import { spawnFixture } from '../helpers/process.js';
import { queueEnv } from '../helpers/queue.js';
import { waitFor } from '../helpers/zk.js';

const PRODUCER = fileURLToPath(new URL('../fixtures/queue/skewed-producer.ts', import.meta.url));
const DELAY_MS = 1500;
const SKEW_MS = -5000;

for (const front of ['zkq', 'bullmq'] as const) {
  test(`a producer (${front}) whose clock is 5 s behind: its delayed job does not start early`, async (t) => {
    const env = await queueEnv(t);
    const started = new Map<string, number>();
    const worker = new Worker('skew', async (job) => void started.set(job.id, Date.now()), { ...env });
    t.after(() => worker.close());
    await worker.waitUntilReady();
    const producer = spawnFixture(PRODUCER, [
      JSON.stringify({
        connectionString: env.connection.connectionString,
        prefix: env.prefix,
        queue: 'skew',
        skewMs: SKEW_MS,
        delay: DELAY_MS,
        front,
      }),
    ]);
    const [, id, at] = (await producer.waitForLine(/^added /)).split(' ');
    await waitFor(async () => started.has(id as string), { timeoutMs: 20_000, what: 'the delayed job started' });
    // before the fix the job was due 5 s in the past and ran at once
    assert.ok((started.get(id as string) as number) >= Number(at) + DELAY_MS, 'not before its delay');
  });
}
