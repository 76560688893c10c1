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
import type { Watcher } from '../zk/types.js';
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
 * workers can run the next one. `serverNow`: ZooKeeper's time, known to a
 * heal (see advanceScheduler).
 */
function advanceFrom(
  store: QueueStore,
  s: SchedulerRecord,
  producerId: string,
  now: number,
  serverNow?: number,
): Promise<string | null> {
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
    ...(serverNow !== undefined ? { serverNow } : {}),
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

/** Schedulers (and then their current iterations) read per read-only multi while healing. */
const HEAL_READ = 50;

/** What a check of the schedulers did, and when the next one may find something to heal. */
export interface SchedulersHealed {
  /** The ids of the iterations added. */
  added: string[];
  /**
   * The earliest time (ZooKeeper's clock) a scheduler read may need healing:
   * its `next`, or `now` for one due that was not healed (its iteration not
   * started, just started, or an advance that failed); undefined when none
   * read will (none, or past their limit).
   */
  recheck: number | undefined;
}

/**
 * Gives every scheduler left without its next iteration that iteration: one
 * whose current iteration (the job at its `next`) was started (claimed at
 * least once; a running one claimed CLAIMER_ADVANCES_MS ago at least) or is
 * gone, when the advance after its claim failed (retries exhausted, an error
 * that was no race) or the job was removed. Due on
 * ZooKeeper's clock `now`: a scheduler whose current iteration is not due
 * yet is not looked at further. Any number of processes may heal at once:
 * the advance is fenced by the scheduler node's version and the iteration's
 * id, so a scheduler gets its next iteration once. The scheduler nodes are
 * read HEAL_READ per read-only multi, and the current iterations of those
 * due likewise: a check of N schedulers costs about N / HEAL_READ round
 * trips, besides the advances. `watch` is set on the listing of the
 * schedulers (one added or removed).
 */
export async function healSchedulers(store: QueueStore, now: number, watch?: Watcher): Promise<SchedulersHealed> {
  const names = await schedulerNames(store, watch);
  const out: SchedulersHealed = { added: [], recheck: undefined };
  const recheckAt = (at: number) => {
    out.recheck = Math.min(out.recheck ?? at, at);
  };
  let failure: unknown;
  for (let i = 0; i < names.length; i += HEAL_READ) {
    const read = await readSchedulers(store, names.slice(i, i + HEAL_READ));
    for (const s of read) if (s.next > now) recheckAt(s.next);
    const due = read.filter((s) => s.next <= now);
    const lacking = await lackNextIteration(store, due, now);
    for (const [j, s] of due.entries()) {
      if (!lacking[j]) {
        recheckAt(now); // its iteration is still to start, or its claimer advances it
        continue;
      }
      // one scheduler that cannot advance (its store refuses the iteration) holds no other back
      const jobId = await advanceFrom(store, s, iterationId(s.id, s.next), now, now).catch((err) => {
        failure ??= err;
        recheckAt(now);
        return null;
      });
      if (jobId) {
        out.added.push(jobId);
        recheckAt(now); // its new `next` is read at the next check
      }
    }
  }
  if (failure !== undefined) throw failure;
  return out;
}

/**
 * The names under `schedulers/`, `watch` set on its listing; while there is
 * no such directory (no scheduler was ever made), on its creation.
 */
async function schedulerNames(store: QueueStore, watch?: Watcher): Promise<string[]> {
  const dir = store.layout.schedulersDir;
  for (;;) {
    try {
      return await store.session.getChildren(dir, watch ? { watch } : {});
    } catch (err) {
      if (!(err instanceof NoNodeError)) throw err;
    }
    if (!watch || !(await store.session.exists(dir, { watch }))) return [];
  }
}

/** The scheduler nodes `names` (`s-<id>`) in one read-only multi; those gone or unreadable are left out. */
async function readSchedulers(store: QueueStore, names: readonly string[]): Promise<SchedulerRecord[]> {
  const replies = await store.session.readMulti(
    names.map((n) => ({ op: 'getData' as const, path: store.layout.scheduler(decodeURIComponent(n.slice(2))) })),
  );
  return replies.flatMap((r) => {
    if (!r.ok) return [];
    try {
      return [JSON.parse(r.data.toString()) as SchedulerRecord];
    } catch {
      return []; // not a scheduler's node: nothing to heal
    }
  });
}

/**
 * How long after its claim (on ZooKeeper's clock: the claim node's ctime
 * against ZooKeeper's time now) a running iteration is left to its claimer,
 * which advances the scheduler as it starts, ms.
 */
const CLAIMER_ADVANCES_MS = 5000;

/**
 * Whether each scheduler of `due` has no next iteration: its current one (the
 * job at its `next`) was started and is not just being started, or is gone.
 * A claim writes no record: a running iteration is told by its claim node,
 * and when it was claimed by that node's ctime (its record reads waiting, not
 * started, for as long as it runs: its claimer dead before advancing, or its
 * advance failed for good, it was never healed while claimed). The
 * iterations and their claim nodes are read in one read-only multi.
 */
async function lackNextIteration(store: QueueStore, due: readonly SchedulerRecord[], now: number): Promise<boolean[]> {
  const ids = due.map((s) => iterationId(s.id, s.next));
  const replies = await store.session.readMulti(
    ids.flatMap((id) => [
      { op: 'getData' as const, path: store.layout.job(id) },
      { op: 'getData' as const, path: store.layout.claim(id) },
    ]),
  );
  return ids.map((id, i) => {
    const r = replies[2 * i];
    const claim = replies[2 * i + 1];
    if (!r) return false;
    if (!r.ok) return r.error instanceof NoNodeError; // gone; anything else (unreadable) is not ours to judge
    if (claim?.ok && 'stat' in claim) {
      // on the process's clock (tests), the claim's time as its claimer wrote it: a ctime is ZooKeeper's
      const claimed = store.session.clock === 'process' ? claimedAt(claim.data, claim.stat.ctime) : claim.stat.ctime;
      return now - claimed >= CLAIMER_ADVANCES_MS;
    }
    try {
      const record = decodeRecord(r.data, store.layout.job(id));
      if (record.attemptsStarted === 0) return false; // not started: it is the next iteration
      // on the process's clock (tests), the claim's time as its claimer wrote it: an mtime is ZooKeeper's
      const claimed = store.session.clock === 'process' ? (record.processedOn ?? r.stat.mtime) : r.stat.mtime;
      return record.state !== 'active' || now - claimed >= CLAIMER_ADVANCES_MS;
    } catch {
      return false; // malformed: not ours to judge
    }
  });
}

/** The claim's time as its claimer wrote it in the claim node (`at`), else `fallback`. */
function claimedAt(data: Buffer, fallback: number): number {
  try {
    const at = (JSON.parse(data.toString()) as { at?: unknown }).at;
    return typeof at === 'number' ? at : fallback;
  } catch {
    return fallback;
  }
}

/**
 * Every scheduler, by the time of its current iteration. Read HEAL_READ per
 * read-only multi, as a check of the schedulers reads them: N schedulers cost
 * about N / HEAL_READ round trips, not a request each.
 */
export async function listSchedulers(store: QueueStore): Promise<SchedulerRecord[]> {
  const names = await store.children(store.layout.schedulersDir);
  const read: SchedulerRecord[] = [];
  for (let i = 0; i < names.length; i += HEAL_READ)
    read.push(...(await readSchedulers(store, names.slice(i, i + HEAL_READ))));
  return read.sort((a, b) => a.next - b.next);
}
