/**
 * Prometheus metrics of zkq Workers, through prom-client (an optional peer
 * dependency: this module is `@zkq/worker/metrics`, apart from the main
 * entry, so a worker without it never loads prom-client).
 *
 * ```ts
 * import { register } from 'prom-client';
 * import { workerMetrics } from '@zkq/worker/metrics';
 * workerMetrics(worker, { registry: register });
 * ```
 *
 * Per worker (labels `queue`, `worker`): jobs completed, failed (attempts),
 * stalled, lost; attempt durations; jobs running; whether its ZooKeeper
 * session is connected. Per queue (labels `queue`, `state`, no worker label):
 * `zkq_queue_depth`, the job counts of every state, read at scrape time by
 * the queue's housekeeping leader only, so that summing over all workers'
 * scrapes counts each job once. Several workers may share one registry.
 */
import type { JobCounts, Session } from '@zkq/core';
import { InvalidArgumentError } from '@zkq/core';
import { getJobCounts } from '@zkq/core/internal';
import { Counter, Gauge, register as globalRegistry, Histogram, type Registry } from 'prom-client';
import { workerStore } from './internals.js';
import type { Worker } from './worker.js';

/** Seconds; jobs from a few ms to several minutes. */
export const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

/** States of `zkq_queue_depth`. */
export const DEPTH_STATES = [
  'waiting',
  'prioritized',
  'delayed',
  'paused',
  'active',
  'completed',
  'failed',
  'waiting-children',
] as const;

export interface WorkerMetricsOptions {
  /** Where the metrics are registered. Default: prom-client's global registry. */
  registry?: Registry;
  /**
   * Who reports `zkq_queue_depth`: `'leader'` (default) the queue's
   * housekeeping leader only, so each queue is counted once across all
   * workers; `'always'` this worker (use with one worker per queue, or with
   * `housekeeping: false` everywhere); `false` never.
   */
  queueDepth?: 'leader' | 'always' | false;
}

/** A worker's metrics: `stop()` detaches the worker (its series are removed). */
export interface WorkerMetrics {
  readonly registry: Registry;
  /** Whether the worker's ZooKeeper session is connected now. */
  isConnected(): boolean;
  stop(): void;
}

interface Attached {
  worker: Worker;
  depth: 'leader' | 'always' | false;
  running: Map<string, number>;
  connected: boolean;
}

/** The metrics of one registry, shared by the workers attached to it. */
class Hub {
  readonly attached = new Set<Attached>();
  readonly completed: Counter<'queue' | 'worker'>;
  readonly failed: Counter<'queue' | 'worker'>;
  readonly stalled: Counter<'queue' | 'worker'>;
  readonly lost: Counter<'queue' | 'worker'>;
  readonly duration: Histogram<'queue' | 'worker' | 'status'>;
  readonly active: Gauge<'queue' | 'worker'>;
  readonly connected: Gauge<'queue' | 'worker'>;
  readonly depth: Gauge<'queue' | 'state'>;

  constructor(readonly registry: Registry) {
    const registers = [registry];
    const labelNames = ['queue', 'worker'] as const;
    const counter = (name: string, help: string) => new Counter({ name, help, labelNames, registers });
    this.completed = counter('zkq_jobs_completed_total', 'Jobs this worker completed');
    this.failed = counter('zkq_jobs_failed_total', 'Job attempts that failed on this worker (retries included)');
    this.stalled = counter('zkq_jobs_stalled_total', 'Jobs found stalled (lease expired) by this worker');
    this.lost = counter(
      'zkq_jobs_lost_total',
      'Jobs this worker lost while running them (claim revoked; result dropped)',
    );
    this.duration = new Histogram({
      name: 'zkq_job_duration_seconds',
      help: 'Time from the start of an attempt to its completion or failure',
      labelNames: ['queue', 'worker', 'status'],
      buckets: DURATION_BUCKETS,
      registers,
    });
    const hub = this;
    this.active = new Gauge({
      name: 'zkq_jobs_active',
      help: 'Jobs running on this worker now',
      labelNames,
      registers,
      collect() {
        for (const a of hub.attached) this.set(labelsOf(a.worker), a.running.size);
      },
    });
    this.connected = new Gauge({
      name: 'zkq_zookeeper_connected',
      help: "1 while the worker's ZooKeeper session is connected, else 0",
      labelNames,
      registers,
      collect() {
        for (const a of hub.attached) this.set(labelsOf(a.worker), a.connected ? 1 : 0);
      },
    });
    this.depth = new Gauge({
      name: 'zkq_queue_depth',
      help: 'Jobs of the queue per state, reported by one worker per queue (its housekeeping leader)',
      labelNames: ['queue', 'state'],
      registers,
      async collect() {
        await hub.collectDepth(this);
      },
    });
  }

  /** One read of the counts per queue, by a worker that reports them; other queues' series are dropped. */
  async collectDepth(gauge: Gauge<'queue' | 'state'>): Promise<void> {
    const reporters = new Map<string, Worker>();
    for (const a of this.attached) {
      const reports = a.depth === 'always' || (a.depth === 'leader' && a.worker.isLeader);
      if (reports && !reporters.has(a.worker.name)) reporters.set(a.worker.name, a.worker);
    }
    const read = await Promise.all(
      [...reporters].map(async ([queue, worker]) => {
        const store = workerStore(worker);
        const counts: JobCounts | undefined = store
          ? await getJobCounts(store, [...DEPTH_STATES]).catch(() => undefined)
          : undefined;
        return [queue, counts] as const;
      }),
    );
    gauge.reset();
    for (const [queue, counts] of read) {
      if (!counts) continue; // unreadable now: no sample rather than a stale one
      for (const state of DEPTH_STATES) gauge.set({ queue, state }, counts[state] ?? 0);
    }
  }

  attach(a: Attached): void {
    this.attached.add(a);
    const labels = labelsOf(a.worker);
    for (const c of [this.completed, this.failed, this.stalled, this.lost]) c.inc(labels, 0);
  }

  detach(a: Attached): void {
    this.attached.delete(a);
    const labels = labelsOf(a.worker);
    for (const m of [this.completed, this.failed, this.stalled, this.lost, this.active, this.connected]) {
      m.remove(labels);
    }
    for (const status of ['completed', 'failed']) this.duration.remove({ ...labels, status });
  }
}

function labelsOf(worker: Worker): { queue: string; worker: string } {
  return { queue: worker.name, worker: worker.id };
}

const hubs = new WeakMap<Registry, Hub>();

/** Registers `worker`'s metrics in `opts.registry` (prom-client's global one by default). */
export function workerMetrics(worker: Worker, opts: WorkerMetricsOptions = {}): WorkerMetrics {
  const registry = opts.registry ?? globalRegistry;
  const depth = opts.queueDepth ?? 'leader';
  if (depth !== 'leader' && depth !== 'always' && depth !== false) {
    throw new InvalidArgumentError("queueDepth must be 'leader', 'always' or false", 'queueDepth');
  }
  let hub = hubs.get(registry);
  if (!hub) {
    hub = new Hub(registry);
    hubs.set(registry, hub);
  }
  const h = hub;
  const a: Attached = { worker, depth, running: new Map(), connected: false };
  h.attach(a);
  const labels = labelsOf(worker);
  const finish = (id: string, status: 'completed' | 'failed') => {
    const t0 = a.running.get(id);
    a.running.delete(id);
    if (t0 !== undefined) h.duration.observe({ ...labels, status }, (performance.now() - t0) / 1000);
  };
  const listeners = {
    active: (job: { id: string }) => a.running.set(job.id, performance.now()),
    completed: (job: { id: string }) => {
      h.completed.inc(labels);
      finish(job.id, 'completed');
    },
    failed: (job: { id: string } | undefined) => {
      h.failed.inc(labels);
      if (job) finish(job.id, 'failed');
    },
    stalled: () => h.stalled.inc(labels),
    lost: (job: { id: string }) => {
      h.lost.inc(labels);
      a.running.delete(job.id);
    },
    closed: () => {
      a.connected = false;
    },
  };
  for (const [event, fn] of Object.entries(listeners)) worker.on(event as 'closed', fn as () => void);
  let unfollow: (() => void) | undefined;
  let stopped = false;
  worker.client.then(
    (session: Session) => {
      if (stopped) return;
      const set = (state: string) => {
        a.connected = state === 'connected' || state === 'reconnected';
      };
      set(session.state);
      session.on('state', set);
      unfollow = () => session.off('state', set);
    },
    () => undefined, // never connected (or closed first): stays 0
  );
  return {
    registry,
    isConnected: () => a.connected,
    stop() {
      if (stopped) return;
      stopped = true;
      for (const [event, fn] of Object.entries(listeners)) worker.off(event as 'closed', fn as () => void);
      unfollow?.();
      h.detach(a);
    },
  };
}
