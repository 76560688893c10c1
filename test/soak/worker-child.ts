/**
 * One soak worker process. argv[2]: JSON WorkerChildConfig.
 *
 * Appends every processor start and end and every worker event to its own
 * NDJSON log with a synchronous write, before the processor returns or the
 * event is acted on, so a SIGKILL loses nothing that was acknowledged.
 * Talks to its parent over IPC: `{ type: 'ready' }` once running,
 * `{ type: 'leader', leader }` when its housekeeping leadership changes, and
 * the session's credentials on request (to expire it); exits when the
 * parent goes away, so that it can never outlive the soak.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Worker } from '@zkq/worker';
import { dataHash, NdjsonLog, type SoakResult } from './history.js';

export interface WorkerChildConfig {
  name: string;
  queue: string;
  connectionString: string;
  prefix: string;
  log: string;
  concurrency: number;
  lockDuration: number;
  stalledInterval: number;
  sessionTimeout: number;
  /** Share of attempts whose processor throws. */
  failRate: number;
  /** Share of attempts that take 0.5-3 s (the rest take up to 0.3 s). */
  slowRate: number;
}

const c = JSON.parse(process.argv[2] ?? '{}') as WorkerChildConfig;
const log = new NdjsonLog(c.log);
const write = (event: object) => log.append({ ...event, w: c.name, ts: Date.now() });
const q = c.queue;

process.on('disconnect', () => process.exit(1));

function runTime(): number {
  const r = Math.random();
  if (r < c.slowRate) return 500 + Math.random() * 2500;
  return r < 0.5 ? 0 : Math.random() * 300;
}

const worker = new Worker(
  q,
  async (job) => {
    const t = String(job.token);
    write({ k: 'start', q, j: job.id, t, n: job.attemptsStarted });
    const ms = runTime();
    if (ms > 0) await sleep(ms);
    if (Math.random() < c.failRate) {
      const err = `planned failure of ${job.id} in attempt ${t}`;
      write({ k: 'end', q, j: job.id, t, ok: false, err });
      throw new Error(err);
    }
    const v: SoakResult = { w: c.name, t, n: job.attemptsStarted, h: dataHash(job.data) };
    write({ k: 'end', q, j: job.id, t, ok: true, v });
    return v;
  },
  {
    connection: { connectionString: c.connectionString, sessionTimeout: c.sessionTimeout },
    prefix: c.prefix,
    name: c.name,
    concurrency: c.concurrency,
    lockDuration: c.lockDuration,
    stalledInterval: c.stalledInterval,
  },
);
worker.on('completed', (job) => write({ k: 'completed', q, j: job.id, t: String(job.token) }));
worker.on('failed', (job, err) => {
  if (job)
    write({ k: 'failed', q, j: job.id, t: String(job.token), reason: err.message, attemptsMade: job.attemptsMade });
});
worker.on('lost', (job, err) => write({ k: 'lost', q, j: job.id, t: String(job.token), err: err.message }));
worker.on('stalled', (j) => write({ k: 'stalled', q, j }));
worker.on('error', (err) => write({ k: 'error', msg: err.message, code: (err as { code?: string }).code }));

const session = await worker.client;
for (const state of ['suspended', 'reconnected', 'lost'] as const) {
  session.on(state, () => write({ k: 'session', state }));
}
process.on('message', (m: { type?: string }) => {
  if (m?.type !== 'credentials') return;
  const { sessionId, password } = session.credentials();
  process.send?.({ type: 'credentials', sessionId: sessionId.toString('hex'), password: password.toString('hex') });
});
process.on('SIGTERM', () => void worker.close(true).finally(() => process.exit(0)));
// The housekeeping leader's term, for reading a history (who promoted, who revoked).
let leader = false;
setInterval(() => {
  if (worker.isLeader !== leader) {
    leader = worker.isLeader;
    write({ k: 'leader', leader });
    process.send?.({ type: 'leader', leader });
  }
}, 100).unref();
write({ k: 'ready', pid: process.pid });
process.send?.({ type: 'ready' });
