/**
 * What thread-processor.mjs runs on a worker process's threads: the same
 * attempts as the inline processor (attempt.ts), each thread appending to the
 * worker's log through a descriptor of its own. A flow parent logs no
 * dependencies here (a thread has no session); the checker then judges its
 * dependencies from the others' attempts. The worker process hands its plan
 * over in THREAD_PLAN_ENV.
 */
import { type AttemptJob, type AttemptPlan, runAttempt, THREAD_PLAN_ENV } from './attempt.js';
import { NdjsonLog } from './history.js';

interface ThreadPlan extends AttemptPlan {
  log: string;
  queue: string;
}

const plan = JSON.parse(process.env[THREAD_PLAN_ENV] ?? '{}') as ThreadPlan;
const log = new NdjsonLog(plan.log);
const write = (event: object) => log.append({ ...event, w: plan.name, ts: Date.now() });

export default function soakAttempt(job: AttemptJob, token: string) {
  return runAttempt(plan, write, plan.queue, job, token);
}
