/**
 * Waits `data.ms` milliseconds (default 100), reporting progress halfway,
 * then returns the time it waited. Handy to watch the worker's logs, drain
 * on SIGTERM, and the metrics of a running job.
 */
import { setTimeout as sleep } from 'node:timers/promises';

export default async function sleepJob(job) {
  const ms = Number(job.data?.ms ?? 100);
  await sleep(ms / 2);
  await job.updateProgress(50);
  await sleep(ms / 2);
  return { sleptMs: ms };
}
