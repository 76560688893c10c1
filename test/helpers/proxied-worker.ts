/**
 * A queue's clients through a FaultProxy of their own, and a worker that
 * counts its processor's starts: what the tests of one faulty request (a
 * reply lost, a write cut, a read answered late) share. The proxy picks the
 * request by what it writes or reads, so each test states which request it
 * hits, and checks the fault did fire: a test whose fault never fired proves
 * nothing.
 */
import type { Queue } from '@zkq/producer';
import { Worker, type WorkerOptions } from '@zkq/worker';
import type { Defer } from './cleanups.js';
import { FaultProxy } from './fault-proxy.js';
import type { QueueTestEnv } from './queue.js';
import { waitFor } from './zk.js';

/** A FaultProxy to `env`'s server, stopped by `defer`, and `env` routed through it (`via`). */
export async function proxied(defer: Defer, env: QueueTestEnv) {
  const proxy = await FaultProxy.start(env.connection.connectionString);
  defer(() => proxy.stop());
  const via = { ...env, connection: { ...env.connection, connectionString: proxy.connectionString } };
  return { proxy, via };
}

/** A worker that counts processor starts per job id; errors are expected while faults are injected. */
export function countingWorker(
  defer: Defer,
  queue: string,
  opts: WorkerOptions,
  processor: (
    job: { id: string; name: string; attemptsMade: number },
    signal?: AbortSignal,
  ) => Promise<unknown> = async () => 'ok',
) {
  const runs = new Map<string, number>();
  const lost: string[] = [];
  const stalled: string[] = [];
  const worker = new Worker(
    queue,
    async (job, _token, signal) => {
      runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
      return processor(job, signal);
    },
    opts,
  );
  worker.on('error', () => undefined);
  worker.on('lost', (job) => lost.push(job.id));
  worker.on('stalled', (id) => stalled.push(id));
  defer(() => worker.close());
  return { worker, runs, lost, stalled };
}

/** `promise`, or a rejection naming `what` after `ms`. */
export function within<T>(promise: Promise<T>, what: string, ms = 20_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`not within ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** The state job `id` ends in (completed or failed), waited for up to `timeoutMs`. */
export async function finishedState(queue: Queue, id: string, timeoutMs = 20_000): Promise<string> {
  return waitFor(
    async () => {
      const state = await queue.getJobState(id);
      return state === 'completed' || state === 'failed' ? state : undefined;
    },
    { timeoutMs, what: `job ${id} finished` },
  );
}
