/**
 * Queue: adds jobs and inspects a queue (BullMQ's Queue, on ZooKeeper).
 *
 * ```ts
 * const queue = new Queue('emails', { connection: { connectionString: '127.0.0.1:2181' } });
 * const job = await queue.add('welcome', { to: 'ada@example.com' }, { attempts: 3 });
 * ```
 *
 * Every argument is validated here, before anything reaches ZooKeeper. The
 * class comes in layers, one subject each: queue-base.ts (options,
 * connection, events, spans, close), queue-getters.ts (reads),
 * queue-control.ts (pause, limits, removal, cleaning, retries), and here the
 * adds.
 */
import {
  DEFAULT_PREFIX,
  InvalidArgumentError,
  Job,
  JobExistsError,
  JobNotFoundError,
  type JobsOptions,
  NodeExistsError,
  SpanKind,
} from '@zkq/core';
import {
  type AddOutcome,
  addFlow,
  type EnqueueEntry,
  enqueueJobs,
  type QueueStore,
  TelemetryAttributes,
  type Turn,
  validateJobName,
} from '@zkq/core/internal';
import { buildRecords, type JobToBuild, parentLinkOf, prepareJob } from './job-records.js';
import { QueueControl } from './queue-control.js';

export type { QueueListener } from './queue-base.js';

/** One job of `addBulk`. */
export interface BulkJob<DataType = unknown, NameType extends string = string> {
  name: NameType;
  data: DataType;
  opts?: JobsOptions;
}

/** Times an add whose existing job vanished before it was read is tried again. */
const ADD_EXISTING_ATTEMPTS = 3;

export class Queue<DataType = any, ResultType = any, NameType extends string = string> extends QueueControl<
  DataType,
  ResultType,
  NameType
> {
  /**
   * Adds one job. With an existing custom `jobId`, resolves with the existing
   * job instead; with `deduplication` whose key is live, with the kept job
   * (one a ttl key outlived: its id, with this add's name, data and options, as BullMQ).
   */
  async add(name: NameType, data: DataType, opts?: JobsOptions): Promise<Job<DataType, ResultType, NameType>> {
    validateJobName(name);
    return this.addOrder.run((turn) =>
      this.trace(
        SpanKind.PRODUCER,
        'add',
        async (span, metadata) => {
          // The trace context travels inside the job (BullMQ's place for it), unless the job opts out.
          const traced = metadata && !opts?.telemetry?.omitContext ? { ...opts, telemetry: { metadata } } : opts;
          const [job] = await this.addJobs([{ name, data, ...(traced ? { opts: traced } : {}) }], turn);
          span?.setAttributes({ [TelemetryAttributes.JobName]: name, [TelemetryAttributes.JobId]: job?.id });
          return job as Job<DataType, ResultType, NameType>;
        },
        `${this.name}.${name}`,
      ),
    );
  }

  /**
   * Adds many jobs, all or nothing per transaction (chunks of up to 500 jobs /
   * ~700 KB each, so any size works). Jobs whose custom id exists come back as
   * the existing jobs.
   */
  async addBulk(jobs: BulkJob<DataType, NameType>[]): Promise<Job<DataType, ResultType, NameType>[]> {
    if (!Array.isArray(jobs)) throw new InvalidArgumentError('addBulk takes an array of { name, data, opts }', 'jobs');
    return this.addOrder.run((turn) =>
      this.trace(SpanKind.PRODUCER, 'addBulk', async (span, metadata) => {
        span?.setAttributes({
          [TelemetryAttributes.BulkNames]: jobs.map((j) => j?.name),
          [TelemetryAttributes.BulkCount]: jobs.length,
        });
        if (!metadata) return this.addJobs(jobs, turn);
        return this.addJobs(
          jobs.map((j) => {
            if (!j || typeof j !== 'object' || j.opts?.telemetry?.omitContext) return j;
            const given = j.opts?.telemetry?.metadata;
            return { ...j, opts: { ...j.opts, telemetry: { ...j.opts?.telemetry, metadata: given ?? metadata } } };
          }),
          turn,
        );
      }),
    );
  }

  /**
   * Adds jobs (no span: add and addBulk make it). `turn` was taken when the
   * call was made: the jobs join the group commit after those of every
   * earlier call, whatever each waited for (ids, the clock), so pipelined
   * adds are stored in call order. Jobs with a parent go last, each in its
   * own transaction, with the turn held until they are in.
   */
  private async addJobs(
    jobs: BulkJob<DataType, NameType>[],
    turn: Turn,
  ): Promise<Job<DataType, ResultType, NameType>[]> {
    const prepared = jobs.map((j, i): JobToBuild => {
      const p = prepareJob(j, this.opts.defaultJobOptions, `jobs[${i}]`);
      return { ...p, parentLink: parentLinkOf(p.opts, this.opts.prefix ?? DEFAULT_PREFIX) };
    });
    const store = await this.store();
    const entries = await buildRecords(store, prepared);
    const added = new Map<string, Job<DataType, ResultType, NameType>>();
    const children = entries.filter((e) => e.record.parentLink);
    // a call with children keeps its place until they are added: they go after its other jobs
    const held: Turn = children.length > 0 ? { wait: turn.wait, pass: () => {} } : turn;
    await this.enqueue(
      store,
      entries.filter((e) => !e.record.parentLink),
      added,
      held,
    );
    if (children.length > 0) await turn.wait();
    // a child goes on its own, counted into its parent's dependencies in its transaction
    for (const e of children) await this.addChild(store, e, added);
    return entries.map((e) => added.get(e.record.id) as Job<DataType, ResultType, NameType>);
  }

  /** Enqueues jobs without a parent; a custom id that exists answers with the existing job. */
  private async enqueue(
    store: QueueStore,
    entries: EnqueueEntry[],
    added: Map<string, Job<DataType, ResultType, NameType>>,
    turn: Turn,
  ): Promise<void> {
    let pending = entries;
    // A job whose id existed may be deleted before it is read (retention, remove): then the
    // id is free again, and that entry is enqueued anew rather than answered with a job not stored.
    for (let attempt = 0; pending.length > 0; attempt++) {
      // only the first round keeps the call's place: a later one enqueues what vanished meanwhile
      const outcomes = await enqueueJobs(store, pending, attempt === 0 ? turn : undefined);
      const vanished: EnqueueEntry[] = [];
      await Promise.all(
        pending.map(async (e, i) => {
          const outcome = outcomes[i] as AddOutcome;
          if (outcome.kind === 'added') {
            const job = new Job<DataType, ResultType, NameType>(store, e.record);
            if (e.record.state === 'waiting') this.emit('waiting', job);
            added.set(e.record.id, job);
            return;
          }
          if (outcome.kind === 'existing') this.emit('duplicated', outcome.id);
          const stored = await store.getJob(outcome.id);
          if (stored) added.set(e.record.id, new Job<DataType, ResultType, NameType>(store, stored.record));
          else if (outcome.kind === 'deduplicated') {
            // a throttle key outlives its job: BullMQ answers with the kept id and the add's own data
            added.set(e.record.id, new Job<DataType, ResultType, NameType>(store, { ...e.record, id: outcome.id }));
          } else if (attempt < ADD_EXISTING_ATTEMPTS) vanished.push(e);
          else throw new JobNotFoundError(outcome.id);
        }),
      );
      pending = vanished;
    }
  }

  /**
   * Adds a job with `opts.parent`, counted into the parent's dependencies in
   * the same transaction; MissingParentError when the parent does not exist.
   * A custom id that exists answers with the existing job, as without a parent.
   */
  private async addChild(
    store: QueueStore,
    e: EnqueueEntry,
    added: Map<string, Job<DataType, ResultType, NameType>>,
  ): Promise<void> {
    const { record } = e;
    for (let attempt = 0; ; attempt++) {
      try {
        await addFlow(store, [{ queue: this.name, record, lane: e.lane }], 'refuse');
        const job = new Job<DataType, ResultType, NameType>(store, record);
        if (record.state === 'waiting') this.emit('waiting', job);
        added.set(record.id, job);
        return;
      } catch (err) {
        const taken =
          (err instanceof JobExistsError && err.jobId === record.id) ||
          (err instanceof NodeExistsError && err.path === store.layout.job(record.id));
        if (!(taken && e.custom)) throw err;
      }
      this.emit('duplicated', record.id);
      const stored = await store.getJob(record.id);
      if (stored) {
        added.set(record.id, new Job<DataType, ResultType, NameType>(store, stored.record));
        return;
      }
      if (attempt >= ADD_EXISTING_ATTEMPTS) throw new JobNotFoundError(record.id);
    }
  }
}
