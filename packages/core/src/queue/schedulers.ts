/**
 * Job schedulers: a node per scheduler, `schedulers/s-<id>`, holding its
 * repeat options, its job template and the time `next` of its current
 * iteration. An iteration is a job with the id `repeat:<scheduler>:<next>`.
 *
 * Exactly one job per tick, whatever the number of processes and their
 * clocks: the next iteration is added by the fenced transaction of
 * protocol/scheduler-advance.ts. Only the running iteration's job may
 * advance its scheduler (`producerId`): a worker that claims it again after
 * a crash advances it once, and a stale one not at all. A scheduler whose
 * advance failed for good (or whose iteration was removed) is advanced by
 * whoever promotes delayed jobs next checks the schedulers
 * (healSchedulers), by the same transaction. Upserts and removals:
 * protocol/scheduler-upsert.ts.
 */
import { CronExpressionParser } from 'cron-parser';
import { NoNodeError } from '../zk/errors.js';
import { advanceScheduler, iterationId, readScheduler, type SchedulerRecord } from './protocol/scheduler-advance.js';
import { decodeRecord, type JobRecord } from './record.js';
import type { QueueStore } from './store.js';
import type { JobsOptions } from './types.js';

export {
  advanceScheduler,
  everyNext,
  type IterationOpts,
  iterationId,
  readScheduler,
  type SchedulerRecord,
  type SchedulerSpec,
} from './protocol/scheduler-advance.js';
export {
  removeScheduler,
  SchedulerCollisionError,
  SchedulerSlotsBusyError,
  upsertScheduler,
} from './protocol/scheduler-upsert.js';

/**
 * Advances the scheduler of `record`, an iteration just claimed by zkq's own
 * Worker (BullMQ's Worker does this itself, through its JobScheduler).
 * Resolves with the new job id, or null when there is none to add or another
 * process added it.
 */
export async function advanceAfterClaim(store: QueueStore, record: JobRecord): Promise<string | null> {
  const id = (record.opts as { repeatJobKey?: string }).repeatJobKey;
  if (!id) return null;
  const current = await readScheduler(store, id);
  if (!current) return null;
  return advanceFrom(store, current.record, record.id, Date.now());
}

/**
 * Adds the iteration after `producerId`'s: the next time by the scheduler's
 * `every` or cron `pattern` (in `tz`), none past its `limit` or `endDate`,
 * and the iteration's options in BullMQ's shape, so either front-end's
 * workers can run the next one.
 */
function advanceFrom(store: QueueStore, s: SchedulerRecord, producerId: string, now: number): Promise<string | null> {
  const id = s.id;
  if (s.limit !== undefined && s.ic >= s.limit) return Promise.resolve(null);
  if (s.endDate !== undefined && now > s.endDate) return Promise.resolve(null);
  let next = s.next;
  if (!s.every) {
    if (!s.pattern) return Promise.resolve(null);
    const from = new Date(Math.max(now, s.next, s.startDate ?? 0));
    next = CronExpressionParser.parse(s.pattern, { currentDate: from, ...(s.tz ? { tz: s.tz } : {}) })
      .next()
      .getTime();
  }
  return advanceScheduler(store, {
    id,
    next,
    now,
    producerId,
    iteration: (at) =>
      ({
        ...s.opts,
        jobId: iterationId(id, at),
        repeatJobKey: id,
        prevMillis: at,
        repeat: {
          ...(s.every ? { every: s.every } : {}),
          ...(s.pattern ? { pattern: s.pattern } : {}),
          ...(s.tz ? { tz: s.tz } : {}),
          ...(s.limit !== undefined ? { limit: s.limit } : {}),
          ...(s.startDate !== undefined ? { startDate: s.startDate } : {}),
          ...(s.endDate !== undefined ? { endDate: s.endDate } : {}),
          ...(s.offset !== undefined ? { offset: s.offset } : {}),
          count: s.ic + 1,
        },
      }) as JobsOptions,
  });
}

/** Schedulers read at once while healing. */
const HEAL_READ = 50;

/**
 * Gives every scheduler left without its next iteration that iteration: one
 * whose current iteration (the job at its `next`) was started (claimed at
 * least once; a running one claimed CLAIMER_ADVANCES_MS ago at least) or is
 * gone, when the advance after its claim failed (retries exhausted, an error
 * that was no race) or the job was removed. Due on
 * ZooKeeper's clock `now`: a scheduler whose current iteration is not due
 * yet is not looked at further. Any number of processes may heal at once:
 * the advance is fenced by the scheduler node's version and the iteration's
 * id, so a scheduler gets its next iteration once. Resolves with the ids of
 * the iterations added.
 */
export async function healSchedulers(store: QueueStore, now: number): Promise<string[]> {
  const names = await store.children(store.layout.schedulersDir);
  const added: string[] = [];
  let failure: unknown;
  for (let i = 0; i < names.length; i += HEAL_READ) {
    const read = await Promise.all(
      names
        .slice(i, i + HEAL_READ)
        .map((n) => readScheduler(store, decodeURIComponent(n.slice(2))).catch(() => undefined)),
    );
    const due = read.flatMap((r) => (r && r.record.next <= now ? [r.record] : []));
    const orphans = await Promise.all(
      due.map(async (s) => ((await lacksNextIteration(store, s, now)) ? s : undefined)),
    );
    for (const s of orphans) {
      if (!s) continue;
      // one scheduler that cannot advance (its store refuses the iteration) holds no other back
      const jobId = await advanceFrom(store, s, iterationId(s.id, s.next), now).catch((err) => {
        failure ??= err;
        return null;
      });
      if (jobId) added.push(jobId);
    }
  }
  if (failure !== undefined) throw failure;
  return added;
}

/**
 * How long after its claim (on ZooKeeper's clock: the record's mtime against
 * ZooKeeper's time now) a running iteration is left to its claimer, which
 * advances the scheduler as it starts, ms.
 */
const CLAIMER_ADVANCES_MS = 5000;

/**
 * The scheduler has no next iteration: its current one (the job at its
 * `next`) was started and is not just being started, or is gone.
 */
async function lacksNextIteration(store: QueueStore, s: SchedulerRecord, now: number): Promise<boolean> {
  const path = store.layout.job(iterationId(s.id, s.next));
  try {
    const { data, stat } = await store.session.getData(path);
    const record = decodeRecord(data, path);
    if (record.attemptsStarted === 0) return false; // not started: it is the next iteration
    // on the process's clock (tests), the claim's time as its claimer wrote it: an mtime is ZooKeeper's
    const claimed = store.session.clock === 'process' ? (record.processedOn ?? stat.mtime) : stat.mtime;
    return record.state !== 'active' || now - claimed >= CLAIMER_ADVANCES_MS;
  } catch (err) {
    return err instanceof NoNodeError; // gone; anything else (unreadable) is not ours to judge
  }
}

/** Every scheduler, by the time of its current iteration. */
export async function listSchedulers(store: QueueStore): Promise<SchedulerRecord[]> {
  const names = await store.children(store.layout.schedulersDir);
  const read = await Promise.all(names.map((n) => readScheduler(store, decodeURIComponent(n.slice(2)))));
  return read.flatMap((r) => (r ? [r.record] : [])).sort((a, b) => a.next - b.next);
}
