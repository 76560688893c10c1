/**
 * Scheduler upsert and removal: the scheduler node is created, rewritten or
 * deleted at the version read, in the transaction that adds its next
 * iteration (scheduler-advance.ts) or removes the one that has not started.
 * Another process changing the scheduler or its jobs meanwhile makes the
 * write fail, and the change is planned again from a fresh read (the
 * executor's runPlanned).
 */
import { JobStateError } from '../errors.js';
import type { QueueEventRecord } from '../event-record.js';
import { validateCustomJobId } from '../layout.js';
import type { JobsOptions } from '../types.js';
import { removeOps } from './builders.js';
import type { ProtocolContext } from './context.js';
import type { ProtocolOp } from './executor.js';
import { findPointer } from './job-reads.js';
import {
  everyNext,
  type IterationOpts,
  iterationId,
  iterationRecord,
  iterationUnit,
  readScheduler,
  type SchedulerRecord,
  type SchedulerSpec,
  schedulerOp,
  schedulerVerdict,
} from './scheduler-advance.js';

/** Slots an `every` scheduler walks past jobs that already hold them. */
const MAX_SLOT_SCANS = 32;

export class SchedulerCollisionError extends JobStateError {
  constructor(jobId: string) {
    super(jobId, 'cannot add the scheduler iteration: a job with its id exists already');
  }
}

export class SchedulerSlotsBusyError extends JobStateError {
  constructor(jobId: string) {
    super(jobId, `cannot add the scheduler iteration: the next ${MAX_SLOT_SCANS} time slots hold jobs already`);
  }
}

/**
 * Creates or replaces scheduler `id` and adds its next iteration. A previous
 * iteration that has not started is replaced (an `every` scheduler keeps its
 * time). Resolves with the iteration's job id and delay.
 */
export async function upsertScheduler(
  store: ProtocolContext,
  u: {
    id: string;
    next: number;
    now: number;
    spec: SchedulerSpec;
    data: string;
    opts: JobsOptions;
    iteration: IterationOpts;
  },
): Promise<{ jobId: string; delay: number }> {
  // every iteration's id must be a valid job id (13-digit millis until the year 2286)
  validateCustomJobId(iterationId(u.id, 1e12));
  await store.init();
  await store.ensureDir(store.layout.schedulersDir);
  return store.executor.runPlanned(
    async () => {
      // ticks are timed on ZooKeeper's clock, as the leader promotes them (a skewed producer's
      // upsert neither starts the schedule early nor shifts its grid)
      const now = await store.serverNow().catch(() => u.now);
      const prev = await readScheduler(store, u.id);
      const every = u.spec.every;
      let next = u.next;
      const everyChanged = prev !== undefined && prev.record.every !== every;
      // without an offset of its own, an upsert keeps the grid the scheduler is on
      let offset = u.spec.offset ?? (everyChanged ? undefined : prev?.record.offset);
      if (every) {
        ({ next, offset } = everyNext(
          everyChanged ? undefined : prev?.record.next,
          every,
          now,
          offset,
          u.spec.startDate,
        ));
      }
      const ops: ProtocolOp[] = [];
      const events: QueueEventRecord[] = [];
      let replaced: string | undefined;
      if (prev) {
        const prevId = iterationId(u.id, prev.record.next);
        const old = await store.getJob(prevId);
        if (old && (old.record.state === 'delayed' || old.record.state === 'waiting')) {
          const pointer = await findPointer(store, old.record);
          ops.push(...removeOps(store.layout, { id: prevId, version: old.version, pointer }));
          events.push({ event: 'removed', jobId: prevId, prev: old.record.state, ts: now });
          replaced = prevId;
          if (every && !everyChanged) next = prev.record.next;
        }
      }
      let jobId = iterationId(u.id, next);
      if (jobId !== replaced && (await store.getJob(jobId))) {
        if (!every) throw new SchedulerCollisionError(jobId);
        let scans = 0;
        do {
          next += every;
          jobId = iterationId(u.id, next);
        } while (++scans < MAX_SLOT_SCANS && (await store.getJob(jobId)));
        if (await store.getJob(jobId)) throw new SchedulerSlotsBusyError(jobId);
      }
      const record: SchedulerRecord = {
        id: u.id,
        name: u.spec.name,
        next,
        ic: (prev?.record.ic ?? 0) + 1,
        data: u.data,
        opts: u.opts,
        ...definedOf({ ...u.spec, offset }),
      };
      const delay = Math.max(next - now, 0);
      const unit = iterationUnit(store, {
        scheduler: schedulerOp(store, u.id, record, prev?.version),
        record: iterationRecord(jobId, record, u.iteration(next), delay, now),
        removal: ops,
        events,
      });
      return { answer: { jobId, delay }, unit };
    },
    { onFailure: schedulerVerdict },
  );
}

/**
 * Removes scheduler `id` and its next iteration when that has not started.
 * Resolves false when there was no such scheduler.
 */
export async function removeScheduler(store: ProtocolContext, id: string): Promise<boolean> {
  await store.init();
  return store.executor.runPlanned(
    async () => {
      const current = await readScheduler(store, id);
      if (!current) return { answer: false };
      const ops: ProtocolOp[] = [{ op: 'delete', path: store.layout.scheduler(id), version: current.version }];
      const events: QueueEventRecord[] = [];
      const jobId = iterationId(id, current.record.next);
      const job = await store.getJob(jobId);
      if (job?.record.state === 'delayed') {
        const pointer = await findPointer(store, job.record);
        ops.push(...removeOps(store.layout, { id: jobId, version: job.version, pointer }));
        events.push({ event: 'removed', jobId, prev: 'delayed', ts: Date.now() });
      }
      return { answer: true, unit: { build: () => ({ ops, events }) } };
    },
    // read back by its receipt: planned again after a lost reply, it found no scheduler and answered false
    { onFailure: schedulerVerdict },
  );
}

function definedOf<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== null)) as Partial<T>;
}
