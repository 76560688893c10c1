/**
 * One soak worker process. argv[2]: JSON WorkerChildConfig.
 *
 * Runs a zkq Worker on its queue, and one more on `also.queue` when given
 * (the second queue of the soak's flows), each with a session of its own.
 * Appends every processor start and end and every worker event to its own
 * NDJSON log with a synchronous write, before the processor returns or the
 * event is acted on, so a SIGKILL loses nothing that was acknowledged. A
 * flow's parent reads its dependencies (what BullMQ's getChildrenValues
 * gives, and the rest) and logs them in its attempt's end; a doomed child
 * throws in every attempt.
 * Talks to its parent over IPC: `{ type: 'ready' }` once running,
 * `{ type: 'leader', leader }` when its housekeeping leadership changes, and
 * the session's credentials on request (to expire it); exits when the
 * parent goes away, so that it can never outlive the soak.
 */
import { subscribe } from 'node:diagnostics_channel';
import { ELECTION_CHANNEL, type ElectionTrace, type Job, type Session } from '@zkq/core';
import { getDependencies, QueueStore } from '@zkq/core/internal';
import { Worker } from '@zkq/worker';
import { runAttempt, THREAD_PLAN_ENV } from './attempt.js';
import { EXTRA_LIMIT, runExtraAttempt } from './extra-attempt.js';
import { NdjsonLog, type SeenDeps } from './history.js';

export interface WorkerChildConfig {
  name: string;
  queue: string;
  connectionString: string;
  prefix: string;
  log: string;
  concurrency: number;
  /** A second queue and its concurrency. */
  also?: { queue: string; concurrency: number };
  /** The extras queue (extra-attempt.ts) and its concurrency: rate-limited, no stall limit. */
  extra?: { queue: string; concurrency: number };
  lockDuration: number;
  stalledInterval: number;
  sessionTimeout: number;
  /** Share of attempts whose processor throws. */
  failRate: number;
  /** Share of attempts that take 0.5-3 s (the rest take up to 0.3 s). */
  slowRate: number;
  /** Run the jobs of `queue` on this many threads (thread-processor.mjs), `jobsPerThread` at once on each. */
  threads?: number;
  jobsPerThread?: number;
}

const c = JSON.parse(process.argv[2] ?? '{}') as WorkerChildConfig;
const log = new NdjsonLog(c.log);
const write = (event: object) => log.append({ ...event, w: c.name, ts: Date.now() });
const plan = { name: c.name, failRate: c.failRate, slowRate: c.slowRate };
const THREAD_PROCESSOR = new URL('./thread-processor.mjs', import.meta.url);

process.on('disconnect', () => process.exit(1));
// Every step of the housekeeping elections (both queues), to explain who led when.
subscribe(ELECTION_CHANNEL, (m) => {
  const { path, id: _id, ...step } = m as ElectionTrace;
  write({ k: 'election', q: path.split('/')[1], ...step });
});

/** A parent's dependencies as its processor sees them, children named `<queue>:<id>`. */
async function seenDeps(session: Session, q: string, id: string): Promise<SeenDeps> {
  const deps = await getDependencies(new QueueStore(session, q), id);
  const name = (k: { queue: string; id: string }) => `${k.queue}:${k.id}`;
  return {
    processed: Object.fromEntries(deps.processed.map((p) => [name(p.child), p.value])),
    ignored: deps.ignored.map((i) => name(i.child)),
    failed: deps.failed.map((f) => name(f.child)),
    unprocessed: deps.unprocessed.map(name),
  };
}

function startWorker(q: string, concurrency: number): Worker {
  const threaded = c.threads !== undefined && q === c.queue;
  const extra = q === c.extra?.queue;
  if (threaded) process.env[THREAD_PLAN_ENV] = JSON.stringify({ ...plan, log: c.log, queue: q });
  const processor = threaded
    ? THREAD_PROCESSOR
    : extra
      ? (job: Job) => runExtraAttempt(c.name, write, () => worker.client, q, job)
      : (job: Job) =>
          runAttempt(plan, write, q, job, String(job.token), async () => seenDeps(await worker.client, q, job.id));
  const worker: Worker = new Worker(q, processor, {
    connection: { connectionString: c.connectionString, sessionTimeout: c.sessionTimeout },
    prefix: c.prefix,
    name: c.name,
    concurrency,
    lockDuration: c.lockDuration,
    stalledInterval: c.stalledInterval,
    ...(threaded ? { threads: c.threads, ...(c.jobsPerThread ? { jobsPerThread: c.jobsPerThread } : {}) } : {}),
    // no stall limit on the extras queue: its jobs end by their own outcome, never 'stalled'
    ...(extra ? { limiter: EXTRA_LIMIT, maxStalledCount: 1_000_000 } : {}),
  });
  worker.on('completed', (job) => write({ k: 'completed', q, j: job.id, t: String(job.token) }));
  worker.on('failed', (job, err) => {
    if (job)
      write({
        k: 'failed',
        q,
        j: job.id,
        t: String(job.token),
        reason: err.message.slice(0, 2000),
        attemptsMade: job.attemptsMade,
      });
  });
  worker.on('lost', (job, err) => write({ k: 'lost', q, j: job.id, t: String(job.token), err: err.message }));
  worker.on('stalled', (j) => write({ k: 'stalled', q, j }));
  worker.on('error', (err) => write({ k: 'error', msg: err.message, code: (err as { code?: string }).code }));
  return worker;
}

const worker = startWorker(c.queue, c.concurrency);
const workers = [
  worker,
  ...(c.also ? [startWorker(c.also.queue, c.also.concurrency)] : []),
  ...(c.extra ? [startWorker(c.extra.queue, c.extra.concurrency)] : []),
];

const sessions = await Promise.all(workers.map((w) => w.client));
for (const [i, session] of sessions.entries()) {
  const q = workers[i]?.name;
  // the session id (as ZooKeeper's ephemeralOwner) tells whose election node is whose
  write({ k: 'session', state: 'connected', q, sid: session.sessionId });
  for (const state of ['suspended', 'reconnected', 'lost'] as const) {
    session.on(state, () => write({ k: 'session', state, q, sid: session.sessionId }));
  }
}
process.on('message', (m: { type?: string }) => {
  if (m?.type !== 'credentials') return;
  const all = sessions.map((s) => s.credentials());
  const hex = all.map(({ sessionId, password }) => ({
    sessionId: sessionId.toString('hex'),
    password: password.toString('hex'),
  }));
  process.send?.({ type: 'credentials', sessions: hex });
});
process.on('SIGTERM', () => void Promise.all(workers.map((w) => w.close(true))).finally(() => process.exit(0)));
// The housekeeping leader's term, for reading a history (who promoted, who revoked).
let leader = false;
setInterval(() => {
  if (worker.isLeader !== leader) {
    leader = worker.isLeader;
    write({ k: 'leader', leader, q: c.queue });
    process.send?.({ type: 'leader', leader });
  }
}, 100).unref();
write({ k: 'ready', pid: process.pid });
process.send?.({ type: 'ready' });
