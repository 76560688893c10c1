/** A worker that holds each job it runs until the test lets them go, to act on a job while it runs. */
import { Worker } from '@zkq/worker';
import type { QueueTestEnv } from './queue.js';

/** A worker running `queue`'s jobs (ids in `started`), each until `release()` is called; closed after the test. */
export function heldWorker(t: { after: (fn: () => unknown) => void }, env: QueueTestEnv, queue: string) {
  let release: () => void = () => {};
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  const started: string[] = [];
  const worker = new Worker(
    queue,
    async (job) => {
      started.push(job.id as string);
      await held;
      return 'done';
    },
    env,
  );
  t.after(() => worker.close());
  return { worker, started, release: () => release() };
}
