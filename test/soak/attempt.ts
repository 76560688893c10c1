/**
 * One attempt of a soak job, as every soak processor runs it (inline in a
 * worker process, or on its threads): the start and the end are appended to
 * the worker's log with a synchronous write before the processor returns, so
 * a SIGKILL loses nothing that was acknowledged.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { dataHash, isFlowData, type SeenDeps, type SoakResult } from './history.js';

/** The environment variable in which a worker process hands its plan to its threads (thread-processor.mjs). */
export const THREAD_PLAN_ENV = 'ZKQ_SOAK_THREAD_PLAN';

export interface AttemptPlan {
  /** The worker's name. */
  name: string;
  /** Share of attempts whose processor throws. */
  failRate: number;
  /** Share of attempts that take 0.5-3 s (the rest take up to 0.3 s). */
  slowRate: number;
}

/** What an attempt needs of its job (a main-thread Job, or the job a thread receives). */
export interface AttemptJob {
  id: string;
  data: unknown;
  attemptsStarted: number;
}

function runTime(slowRate: number): number {
  const r = Math.random();
  if (r < slowRate) return 500 + Math.random() * 2500;
  return r < 0.5 ? 0 : Math.random() * 300;
}

/**
 * Runs one attempt of `job` (queue `q`, token `t`); `readDeps` reads a
 * flow parent's dependencies (where the processor has a session) for its end.
 */
export async function runAttempt(
  plan: AttemptPlan,
  write: (event: object) => void,
  q: string,
  job: AttemptJob,
  t: string,
  readDeps?: () => Promise<SeenDeps>,
): Promise<SoakResult> {
  write({ k: 'start', q, j: job.id, t, n: job.attemptsStarted });
  const flow = isFlowData(job.data) ? job.data : undefined;
  const deps = flow?.parent && readDeps ? { deps: await readDeps() } : {};
  const ms = runTime(plan.slowRate);
  if (ms > 0) await sleep(ms);
  if (flow?.doomed || Math.random() < plan.failRate) {
    const err = `planned failure of ${job.id} in attempt ${t}`;
    write({ k: 'end', q, j: job.id, t, ok: false, err, ...deps });
    throw new Error(err);
  }
  const v: SoakResult = { w: plan.name, t, n: job.attemptsStarted, h: dataHash(job.data) };
  write({ k: 'end', q, j: job.id, t, ok: true, v, ...deps });
  return v;
}
