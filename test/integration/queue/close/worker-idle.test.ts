/**
 * close() of an idle worker resolves promptly, whatever the worker was doing
 * when it came: a poke that lands while no wait is armed (a scan running, a
 * look at the idle line) must not be lost, or the worker would wait out its
 * idle poll (`drainDelay`) or for the line to move.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../../helpers/queue.js';

/** Far longer than the test: a close that waits for the idle poll fails it. */
const DRAIN_DELAY_S = 600;
const CLOSE_DEADLINE_MS = 15_000;

test('idle workers close promptly, at any moment of their idle wait (drainDelay 10 minutes)', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('close-idle', env);
  t.after(() => queue.close());
  for (let round = 0; round < 8; round++) {
    const workers = Array.from(
      { length: 3 },
      () => new Worker('close-idle', async () => 'ok', { ...env, drainDelay: DRAIN_DELAY_S, housekeeping: false }),
    );
    await Promise.all(workers.map((w) => w.waitUntilReady()));
    // Close them in the middle of their work: right after a job ends, a worker scans the head
    // again, and a close that lands then finds no wait armed.
    let done = 0;
    const ended = new Promise<void>((resolve) => {
      for (const w of workers) {
        w.on('completed', () => {
          if (++done === 2 + (round % 3)) resolve();
        });
      }
    });
    await queue.addBulk(Array.from({ length: 6 }, () => ({ name: 'j', data: {} })));
    await ended;
    const closing = Promise.all(workers.map((w) => w.close()));
    const outcome = await Promise.race([
      closing.then(() => 'closed'),
      sleep(CLOSE_DEADLINE_MS, 'hung', { ref: false }),
    ]);
    assert.equal(outcome, 'closed', `round ${round}: close() waited for the idle poll`);
  }
});
