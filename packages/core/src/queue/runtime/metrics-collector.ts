/**
 * MetricsCollector: the Worker's `metrics` option. Counts finished jobs per
 * minute in memory and writes them to the queue's series (BullMQ's
 * getMetrics) at most once per METRICS_FLUSH_MS, so a busy worker costs the
 * store one small transaction per few seconds, not one write per job.
 *
 * A batch that could not be written stays and goes with the next one; a
 * batch whose outcome stayed unknown (the executor could not tell) or whose
 * queue was deleted is dropped rather than risk counting it twice. Counts
 * not yet written when the process dies are lost (at most one interval's).
 */
import { NoNodeError } from '../../zk/errors.js';
import { type MetricsKind, type MinutePoint, notePoint } from '../metrics-series.js';
import { OutcomeUnknownError } from '../protocol/executor.js';
import { recordMetrics } from '../protocol/metrics-record.js';
import type { QueueStore } from '../store.js';

/** How often a worker writes its counts at most, ms. */
export const METRICS_FLUSH_MS = 5000;

export class MetricsCollector {
  private readonly pending: Record<MetricsKind, Map<number, MinutePoint>> = {
    completed: new Map(),
    failed: new Map(),
  };
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  private closed = false;

  constructor(
    private readonly store: QueueStore,
    private readonly maxDataPoints: number,
    private readonly onError: (err: unknown) => void,
    private readonly intervalMs = METRICS_FLUSH_MS,
  ) {}

  /** Counts one job finished (`completed`, or `failed` for good) at `ts`. */
  record(kind: MetricsKind, ts = Date.now()): void {
    notePoint(this.pending[kind], ts);
    this.schedule();
  }

  private schedule(): void {
    if (this.timer || this.closed) return;
    // Jitter spreads the writes of workers started together, so they rarely race for the series.
    const delay = this.intervalMs * (0.75 + Math.random() * 0.5);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, delay);
    this.timer.unref();
  }

  /** Writes what was counted so far; one write at a time. */
  flush(): Promise<void> {
    this.flushing ??= this.write().finally(() => {
      this.flushing = undefined;
      if (this.hasPending()) this.schedule();
    });
    return this.flushing;
  }

  /** Writes the last counts and stops. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.flushing;
    if (this.hasPending()) await this.flush();
  }

  private hasPending(): boolean {
    return this.pending.completed.size > 0 || this.pending.failed.size > 0;
  }

  private async write(): Promise<void> {
    for (const kind of ['completed', 'failed'] as const) {
      const batch = [...this.pending[kind].values()];
      if (batch.length === 0) continue;
      this.pending[kind] = new Map();
      try {
        await recordMetrics(this.store, kind, batch, this.maxDataPoints);
      } catch (err) {
        if (!(err instanceof OutcomeUnknownError || err instanceof NoNodeError) && !this.closed) {
          for (const p of batch) notePoint(this.pending[kind], p.ts, p.n);
        }
        this.onError(err);
      }
    }
  }
}
