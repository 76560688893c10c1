/**
 * A worker that counts its processor's starts per job id and keeps what it
 * reports (completions, errors, lost jobs), for tests where nothing goes
 * wrong: such a worker must report no error, lose no job, and run each job
 * once.
 */
import assert from 'node:assert/strict';
import { Worker, type WorkerOptions } from '@zkq/worker';
import type { QueueTestEnv } from './queue.js';
import { waitFor } from './zk.js';

type Processor = (job: { id: string; name: string; attemptsMade: number }) => Promise<unknown>;

/** A worker that counts processor starts per job id and keeps what it reports. */
export function watchedWorker(
  t: { after(fn: () => unknown): void },
  env: QueueTestEnv,
  queue: string,
  processor: Processor,
  opts: Partial<WorkerOptions> = {},
) {
  const runs = new Map<string, number>();
  const completed = new Map<string, unknown>();
  const errors: Error[] = [];
  const lost: string[] = [];
  const worker = new Worker(
    queue,
    async (job) => {
      runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
      return processor(job);
    },
    { ...env, ...opts },
  );
  worker.on('completed', (job, result) => completed.set(job.id, result));
  worker.on('error', (err) => errors.push(err));
  worker.on('lost', (job) => lost.push(job.id));
  t.after(() => worker.close());
  /** Fails at once with what the worker reported when something went wrong instead. */
  const healthy = (what: string) => {
    assert.deepEqual(
      errors.map((e) => e.message),
      [],
      `${what}: the worker reported errors`,
    );
    assert.deepEqual(lost, [], `${what}: the worker lost jobs nobody else claimed`);
  };
  return { worker, runs, completed, errors, lost, healthy };
}

/** Waits until every job of `ids` completed, failing at once on an error or a lost job. */
export async function allCompleted(w: ReturnType<typeof watchedWorker>, ids: string[], what: string): Promise<void> {
  await waitFor(() => w.errors.length > 0 || w.lost.length > 0 || ids.every((id) => w.completed.has(id)), {
    timeoutMs: 30_000,
    what,
  });
  w.healthy(what);
}
