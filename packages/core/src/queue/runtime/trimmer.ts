/**
 * Trimmer: keeps retained finished jobs within their bounds without trimming
 * after every job. A request runs at once when none ran in the last
 * TRIM_EVERY_MS; otherwise one trailing run is scheduled at the end of that
 * window, so the last burst of completions is trimmed too. Runs of one kind
 * never overlap: two trims deleting the same oldest jobs would collide and
 * fall back to one transaction per job.
 */
import { trimFinished } from '../protocol/index.js';
import type { QueueStore } from '../store.js';
import type { KeepJobs } from '../types.js';

const TRIM_EVERY_MS = 1000;
type Kind = 'completed' | 'failed';

export class Trimmer {
  private readonly last: Record<Kind, number> = { completed: 0, failed: 0 };
  private readonly pending = new Map<Kind, KeepJobs>();
  private readonly timers = new Map<Kind, NodeJS.Timeout>();
  private readonly running = new Map<Kind, Promise<void>>();

  constructor(
    private readonly store: QueueStore,
    private readonly onError: (err: unknown) => void,
  ) {}

  request(kind: Kind, keep: KeepJobs): void {
    if (keep.count === undefined && keep.age === undefined) return;
    const wait = Math.max(this.last[kind] + TRIM_EVERY_MS - Date.now(), this.running.has(kind) ? 1 : 0);
    if (wait <= 0) {
      this.run(kind, keep);
      return;
    }
    this.pending.set(kind, keep);
    if (!this.timers.has(kind)) {
      const timer = setTimeout(() => {
        this.timers.delete(kind);
        const latest = this.pending.get(kind);
        this.pending.delete(kind);
        if (latest) this.run(kind, latest);
      }, wait);
      timer.unref();
      this.timers.set(kind, timer);
    }
  }

  private run(kind: Kind, keep: KeepJobs): void {
    const previous = this.running.get(kind);
    if (previous) {
      // still trimming: try again once it is done
      void previous.then(() => this.request(kind, keep));
      return;
    }
    this.last[kind] = Date.now();
    const run = trimFinished(this.store, kind, keep)
      .then(() => undefined, this.onError)
      .finally(() => this.running.delete(kind));
    this.running.set(kind, run);
  }

  stop(): void {
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
  }
}
