/**
 * The demo's job: a little CPU work (SHA-256 rounds), an optional pause,
 * and a result that says what was done. Runs on a worker thread of
 * `zkq worker`; the default export is called once per job.
 *
 *   data.n        a number to square (default 0)
 *   data.rounds   hashing rounds (default 200)
 *   data.sleepMs  wait this long before finishing (default 0)
 *   data.fail     throw instead of finishing (shows failures and retries)
 */
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';

export default async function demo(job) {
  const { n = 0, rounds = 200, sleepMs = 0, fail = false } = job.data ?? {};
  if (fail) throw new Error(`job ${job.id} was asked to fail`);
  let digest = String(n);
  for (let i = 0; i < rounds; i++) digest = createHash('sha256').update(digest).digest('hex');
  if (sleepMs > 0) await sleep(sleepMs);
  return { square: n * n, digest: digest.slice(0, 12) };
}
