/**
 * A cancel request names the worker that holds the job and its attempt's
 * token, read one after the other. When the attempt read first is given back
 * in place (a RateLimitError) and another worker claims the job before the
 * token is read, the request must still reach the attempt that runs: not be
 * filed under the first worker with the second one's token, where nobody
 * acts on it, and answered true.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { QueueStore, requestCancel } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((r) => {
    open = r;
  });
  return { promise, open };
}

test('a cancel whose job changed hands between reading its claim and its token reaches the attempt running', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('cancel-changed', env);
  t.after(() => queue.close());
  const store = new QueueStore(await queue.client, 'cancel-changed');
  await queue.add('x', {}, { jobId: 'c' });
  const firstStarted = gate();
  const giveBack = gate();
  const first: Worker = new Worker(
    'cancel-changed',
    async (): Promise<string> => {
      firstStarted.open();
      await giveBack.promise;
      void first.close(); // takes nothing more once this attempt is given back
      throw Worker.RateLimitError();
    },
    { ...env, housekeeping: false, lockDuration: 60_000 },
  );
  t.after(() => first.close());
  await firstStarted.promise;
  const secondStarted = gate();
  let aborted: unknown;
  const release = gate();
  const second = new Worker(
    'cancel-changed',
    async (_job, _token, signal) => {
      secondStarted.open();
      await Promise.race([
        release.promise,
        new Promise<void>((resolve) => signal?.addEventListener('abort', () => resolve(), { once: true })),
      ]);
      if (signal?.aborted) aborted = signal.reason;
      return 'done';
    },
    { ...env, housekeeping: false, lockDuration: 60_000, autorun: false },
  );
  t.after(() => second.close());
  let hooked = false;
  // the asker reads the first attempt's claim; the job changes hands before it reads the token
  const asker = Object.create(store) as QueueStore;
  asker.getClaim = async (id: string) => {
    const claim = await store.getClaim(id);
    if (!hooked) {
      hooked = true;
      giveBack.open();
      await first.close();
      void second.run();
      await secondStarted.promise;
    }
    return claim;
  };
  try {
    assert.equal(await requestCancel(asker, 'c', 'stop'), true);
    await waitFor(() => aborted !== undefined, { what: 'the running attempt aborted', timeoutMs: 10_000 });
  } finally {
    release.open();
  }
  assert.match(String((aborted as Error)?.message ?? aborted), /stop/);
});
