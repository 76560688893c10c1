/**
 * Finisher: writes finished attempts in batches. Jobs that finish within the
 * same turn of the event loop (or while a write is in flight) share one
 * fenced transaction; a conflict only costs the job it concerns (see
 * finishJobs). At most MAX_IN_FLIGHT transactions run at once.
 *
 * While someone listens to the queue's events, the finish that leaves it
 * with nothing running and nothing waiting logs `drained` (BullMQ's, written
 * by its finish). It is looked for only when the worker's claim found the
 * queue idle after a job of its finished (`idle()`), once its finishes are
 * written: a worker with a backlog pays nothing for it.
 */
import { logDrained } from '../drained.js';
import { type FinishResult, finishJobs } from '../protocol/finish.js';
import type { Finish } from '../protocol/finish-plan.js';
import type { QueueStore } from '../store.js';

const MAX_BATCH = 100;
const MAX_IN_FLIGHT = 4;

interface Waiting {
  finish: Finish;
  resolve: (r: FinishResult) => void;
  reject: (e: unknown) => void;
}

export class Finisher {
  private queue: Waiting[] = [];
  private inFlight = 0;
  private scheduled = false;

  /** A finished job since the last look at whether the queue is drained. */
  private finishedSinceLook = false;
  /** The worker found the queue idle: look once the finishes in flight are written. */
  private lookWhenWritten = false;

  constructor(
    private readonly store: QueueStore,
    private readonly onError: (err: unknown) => void = () => {},
  ) {}

  /** Records `finish`; resolves with its result once written (or rejected by fencing). */
  finish(finish: Finish): Promise<FinishResult> {
    return new Promise((resolve, reject) => {
      this.queue.push({ finish, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.flush();
    });
  }

  private flush(): void {
    while (this.queue.length > 0 && this.inFlight < MAX_IN_FLIGHT) {
      const batch = this.queue.splice(0, MAX_BATCH);
      this.inFlight++;
      finishJobs(
        this.store,
        batch.map((w) => w.finish),
      )
        .then(
          (results) => {
            for (const [i, w] of batch.entries()) {
              const kind = w.finish.outcome.kind;
              if (results[i]?.ok && (kind === 'completed' || kind === 'failed')) this.finishedSinceLook = true;
              w.resolve(results[i] as FinishResult);
            }
          },
          (err) => {
            for (const w of batch) w.reject(err);
          },
        )
        .finally(() => {
          this.inFlight--;
          if (this.queue.length > 0) this.schedule();
          else if (this.inFlight === 0 && this.lookWhenWritten) this.lookDrained();
        });
    }
  }

  /** The worker's claim found nothing to run: the queue may just have been drained by its finishes. */
  idle(): void {
    if (this.inFlight > 0 || this.queue.length > 0) this.lookWhenWritten = true;
    else this.lookDrained();
  }

  private lookDrained(): void {
    this.lookWhenWritten = false;
    if (!this.finishedSinceLook || !this.store.events.enabled) return;
    this.finishedSinceLook = false;
    logDrained(this.store).catch(this.onError);
  }
}
