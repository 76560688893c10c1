/**
 * Migration of a queue from layout 2 to layout 3 (`zkq migrate <queue>`).
 *
 * The two layouts keep the same nodes; what changed is what a claim writes.
 * Layout 2's claim rewrote the job record (`state: "active"`, the attempt
 * counted) and took the record's new version as its token; layout 3's claim
 * writes the ready pointer blind and takes the pointer's version (claim.ts),
 * never reading the record first. So the queue moves once no layout-2 worker
 * can write it any more:
 *
 * 1. `meta` is read as it is (QueueStore refuses layout 2; this file reads
 *    it itself): layout 3 already is `'current'`, any other but 2 is
 *    LayoutVersionError.
 * 2. No worker may be registered (`workers/`) and no job claimed (`claims/`:
 *    a layout-2 attempt, or a dead worker's claim waiting for its session to
 *    expire): MigrationRefusedError, or with `wait` a wait on both
 *    listings (watched) until they are empty, TimeoutError past `timeoutMs`.
 * 3. Every ready pointer's record is read, in read-only multis: a record
 *    still `state: "active"` belongs to a layout-2 worker that died mid-attempt.
 *    Layout 2 counted that stall at the next claim, which looked at the
 *    record; layout 3's does not, so it is counted here: the record is
 *    rewritten at the version read, `waiting` with `stalledCounter + 1`
 *    (its `attemptsStarted` counted the attempt already), beside a check
 *    that no claim of it exists (created and deleted in the same multi).
 *    A record fixed is no longer active, so a migration that stopped half-way
 *    just runs again and fixes each record once.
 * 4. `meta` is written at the version read with `layout: 3` and its pause
 *    flag as it was. If a claim or a worker registration came and went
 *    during the walk (the directories' child versions moved), the walk runs
 *    again first; a change of `meta` meanwhile plans the write again.
 *
 * Every write goes through the executor. Nothing here stops a layout-2
 * process from being started during the migration: stop them first.
 */
import { TimeoutError } from '../../errors.js';
import { NodeExistsError } from '../../zk/errors.js';
import type { WatchEvent } from '../../zk/types.js';
import { LayoutVersionError, MigrationRefusedError, migrationBlockers } from '../errors.js';
import { LAYOUT_VERSION, PREVIOUS_LAYOUT_VERSION } from '../layout.js';
import { encodeRecord, type JobRecord } from '../record.js';
import { rewriteOps } from './builders.js';
import type { ProtocolContext } from './context.js';
import { READ_CHUNK, readJobsTogether } from './job-reads.js';
import { metaData, readMeta } from './pause.js';
import type { ProtocolOp } from './units.js';
import { readyPointers } from './walks.js';

/** How long a migration with `wait` waits for the queue's workers and claims to go, ms. */
export const DEFAULT_MIGRATE_TIMEOUT_MS = 60_000;
/** Walks of the ready pointers before a queue whose claims keep coming is refused. */
const MIGRATE_WALKS = 3;

export interface MigrateOptions {
  /** Wait for registered workers and claims to go instead of refusing (CLI `--wait`). */
  wait?: boolean;
  /** Longest wait with `wait`, ms (default DEFAULT_MIGRATE_TIMEOUT_MS). */
  timeoutMs?: number;
  /** Called each time `wait` finds workers registered or jobs claimed, with how many, before it waits. */
  onWaiting?: (workers: number, claims: number) => void;
  /** Ready pointers per read of records (default READ_CHUNK). */
  batch?: number;
  /**
   * Called after each batch of ready pointers is walked, with the ids fixed so far:
   * what a caller reports as progress (a throw from it stops the migration
   * where it is, as a crash would).
   */
  onProgress?: (fixed: readonly string[]) => void | Promise<void>;
}

/** What a migration did: the queue was already current, or moved with `jobsFixed` records of dead attempts fixed. */
export type MigrateResult = 'current' | { from: 2; to: 3; jobsFixed: number };

/** Moves the queue of `store` from layout 2 to layout 3 (see the header). */
export async function migrateQueue(store: ProtocolContext, opts: MigrateOptions = {}): Promise<MigrateResult> {
  const first = await readLayout(store);
  if (first === 'current') return 'current';
  const deadline = Date.now() + (opts.timeoutMs ?? DEFAULT_MIGRATE_TIMEOUT_MS);
  const fixed: string[] = [];
  for (let walk = 1; ; walk++) {
    const quiet = await whenQuiet(store, opts, deadline);
    fixed.push(...(await fixDeadAttempts(store, opts, fixed)));
    const done = await writeLayout(store, quiet);
    if (done === 'current') return 'current';
    if (done) return { from: PREVIOUS_LAYOUT_VERSION, to: LAYOUT_VERSION, jobsFixed: fixed.length };
    if (walk >= MIGRATE_WALKS) {
      const [workers, claims] = await blockers(store);
      throw new MigrationRefusedError(store.queue, workers.length, claims.length);
    }
  }
}

/** 'current' for a queue of layout 3, 2 for one to migrate; LayoutVersionError for any other (or none). */
async function readLayout(store: ProtocolContext): Promise<'current' | 2> {
  const { layout } = readMeta((await store.session.getData(store.layout.meta)).data);
  if (layout === LAYOUT_VERSION) return 'current';
  if (layout !== PREVIOUS_LAYOUT_VERSION) throw new LayoutVersionError(store.queue, layout);
  return PREVIOUS_LAYOUT_VERSION;
}

/** The child versions of `workers/` and `claims/` when both were seen empty. */
interface Quiet {
  workers: number;
  claims: number;
}

async function blockers(store: ProtocolContext, watch?: (e: WatchEvent) => void): Promise<[string[], string[]]> {
  return Promise.all([store.children(store.layout.workersDir, watch), store.children(store.layout.claimsDir, watch)]);
}

/**
 * Resolves once no worker is registered and no job claimed (refuses at once
 * without `wait`). Each directory's count and child version come from one
 * stat, so a claim made and gone before it moved the version the walk is
 * judged against.
 */
async function whenQuiet(store: ProtocolContext, opts: MigrateOptions, deadline: number): Promise<Quiet> {
  const { session, layout } = store;
  const timeoutMs = opts.timeoutMs ?? DEFAULT_MIGRATE_TIMEOUT_MS;
  for (;;) {
    const [w, c] = await Promise.all([session.exists(layout.workersDir), session.exists(layout.claimsDir)]);
    const workers = w?.numChildren ?? 0;
    const claims = c?.numChildren ?? 0;
    if (workers === 0 && claims === 0) return { workers: w?.cversion ?? 0, claims: c?.cversion ?? 0 };
    if (opts.wait !== true) throw new MigrationRefusedError(store.queue, workers, claims);
    let changed!: () => void;
    const change = new Promise<boolean>((resolve) => {
      changed = () => resolve(false);
    });
    // watched listings: a change after the stats above fires them, or shows in them
    const [now, held] = await blockers(store, () => changed());
    if (now.length === 0 && held.length === 0) continue;
    opts.onWaiting?.(now.length, held.length);
    const left = deadline - Date.now();
    if (left <= 0) throw waitTimeout(store.queue, now.length, held.length, timeoutMs);
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      change,
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(true), left);
      }),
    ]);
    clearTimeout(timer);
    if (timedOut) {
      const [a, b] = await blockers(store);
      if (a.length > 0 || b.length > 0) throw waitTimeout(store.queue, a.length, b.length, timeoutMs);
    }
  }
}

function waitTimeout(queue: string, workers: number, claims: number, timeoutMs: number): TimeoutError {
  return new TimeoutError(`waiting to migrate queue '${queue}' (${migrationBlockers(workers, claims)})`, timeoutMs);
}

/** The record of a dead layout-2 attempt as layout 3 reads it: waiting, its stall counted. */
function deadAttemptFixed(record: JobRecord): JobRecord {
  return { ...record, state: 'waiting', stalledCounter: record.stalledCounter + 1 };
}

/** Fixes every record left active by a dead layout-2 attempt; resolves with the ids fixed. */
async function fixDeadAttempts(
  store: ProtocolContext,
  opts: MigrateOptions,
  before: readonly string[],
): Promise<string[]> {
  const { layout } = store;
  const fixed: string[] = [];
  for await (const chunk of readyPointers(store, () => true, opts.batch ?? READ_CHUNK)) {
    const reads = await readJobsTogether(
      store,
      chunk.map((l) => l.id),
    );
    const active = reads.filter((r) => r.stored?.record.state === 'active').map((r) => r.id);
    if (active.length > 0) {
      const done = await store.executor.runPlannedBatch(
        active,
        async (ids, attempt) => {
          // the first plan writes at the versions just read; a conflict reads again
          const now = attempt === 1 ? reads.filter((r) => ids.includes(r.id)) : await readJobsTogether(store, ids);
          return now.map((r) => {
            const stored = r.stored;
            if (stored?.record.state !== 'active') return { answer: false };
            const record = encodeRecord(deadAttemptFixed(stored.record));
            const ops = rewriteOps(layout, { id: r.id, version: stored.version, record });
            return { answer: true, unit: { build: () => ({ ops }) } };
          });
        },
        {
          // a claim made since the queue was seen quiet: a worker runs on it after all
          onFailure: async (error, op) => {
            if (!(error instanceof NodeExistsError) || op?.path.startsWith(`${layout.claimsDir}/`) !== true) {
              return undefined;
            }
            const [workers, claims] = await blockers(store);
            throw new MigrationRefusedError(store.queue, workers.length, Math.max(1, claims.length));
          },
        },
      );
      fixed.push(...active.filter((_, k) => done[k]));
    }
    await opts.onProgress?.([...before, ...fixed]);
  }
  return fixed;
}

/**
 * Writes `meta` with layout 3 at the version read, unless a worker or a claim
 * came since the queue was seen quiet (false: walk again). 'current' when
 * another migration wrote it first.
 */
async function writeLayout(store: ProtocolContext, quiet: Quiet): Promise<boolean | 'current'> {
  const { session, layout } = store;
  return store.executor.runPlanned<boolean | 'current'>(async () => {
    const [meta, w, c] = await Promise.all([
      session.getData(layout.meta),
      session.exists(layout.workersDir),
      session.exists(layout.claimsDir),
    ]);
    const { layout: found, paused } = readMeta(meta.data);
    if (found === LAYOUT_VERSION) return { answer: 'current' };
    if (found !== PREVIOUS_LAYOUT_VERSION) throw new LayoutVersionError(store.queue, found);
    if ((w?.cversion ?? 0) !== quiet.workers || (c?.cversion ?? 0) !== quiet.claims) return { answer: false };
    const ops: ProtocolOp[] = [
      { op: 'setData', path: layout.meta, data: metaData(paused), version: meta.stat.version },
    ];
    return { answer: true, unit: { build: () => ({ ops }) } };
  });
}
