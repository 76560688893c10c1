/**
 * Worker: claims jobs of a queue and runs them, `concurrency` at a time
 * (BullMQ's Worker, on ZooKeeper).
 *
 * ```ts
 * const worker = new Worker('emails', async (job) => send(job.data), {
 *   connection: { connectionString: '127.0.0.1:2181' },
 *   concurrency: 10,
 * });
 * ```
 *
 * A processor function runs inline; a file path or URL runs on a piscina
 * thread pool (sandbox/pool.ts), `jobsPerThread` jobs at once per thread; a
 * file that does not exist is refused here (sandbox/processor-file.ts).
 * The claim protocol and its fencing are described in @zkq/core's
 * transitions.ts; this class drives it: JobSource claims, LeaseRenewer keeps
 * claims alive, Finisher writes results in batches. It comes in layers, one
 * subject each: worker-base.ts (options, parts, start-up, registration, the
 * pause flag), worker-claims.ts (the claim loop and the jobs it runs), and
 * here run, the batch-start barrier, pause and close.
 */

import { BatchBarrier, ClosedError, DoubleBarrier, InvalidArgumentError, RateLimitError } from '@zkq/core';
import { type QueueStore, setRateLimit, untilSilent } from '@zkq/core/internal';
import { DEFAULT_CLOSE_TIMEOUT_MS, type Processor, type WorkerOptions } from './options.js';
import { WorkerClaims } from './worker-claims.js';

export type { WorkerListener } from './worker-base.js';

/** Longest wait of close(true) for the server to confirm the session's end, ms. */
const FORCED_SESSION_CLOSE_MS = 1000;

export class Worker<DataType = any, ResultType = any, NameType extends string = string> extends WorkerClaims<
  DataType,
  ResultType,
  NameType
> {
  /** A RateLimitError to throw from a processor after `rateLimit(ms)` (BullMQ's Worker.RateLimitError). */
  static RateLimitError(): RateLimitError {
    return new RateLimitError();
  }

  constructor(name: string, processor: Processor<DataType, ResultType, NameType> | string | URL, opts: WorkerOptions) {
    super(name, processor, opts);
    if (opts.autorun !== false) {
      this.run().catch((err) => this.emitError(err));
    }
  }

  /** Starts claiming and processing; resolves when the worker has closed. */
  run(): Promise<void> {
    if (this.closing) return Promise.reject(new ClosedError(`worker of '${this.name}'`));
    this.running ??= this.start()
      .then(() => this.passBarrier())
      .then(() => this.loop());
    return this.running;
  }

  /**
   * Batch start: claims nothing until `barrier.size` workers have joined the
   * barrier `barriers/<name>` of this queue; then all start together. Each
   * batch is a generation of its own (`BatchBarrier`): a worker that joins
   * after a batch started waits for the next `size`, however many batches
   * used the name before.
   */
  private async passBarrier(): Promise<void> {
    const b = this.opts.barrier;
    if (!b || this.closing) return;
    const store = this.store as QueueStore;
    const path = `${store.layout.barriersDir}/${b.name}`;
    const options = { size: b.size, id: this.id };
    // each batch of `size` is a generation of its own: a second batch under the same name waits for all its members
    this.barrier = b.double
      ? new DoubleBarrier(store.session, path, options)
      : new BatchBarrier(store.session, path, options);
    try {
      await this.barrier.enter({
        signal: this.closeSignal.signal,
        ...(b.timeout !== undefined ? { timeout: b.timeout } : {}),
      });
    } catch (err) {
      if (this.closing) return; // closed while waiting
      throw err;
    }
    this.emit('barrierPassed');
  }

  /**
   * Leaves the batch-start barrier. With `barrier.double`, resolves once every
   * member of the batch has left: the whole batch is done.
   */
  async leaveBarrier(options: { timeout?: number } = {}): Promise<void> {
    if (!this.barrier) throw new InvalidArgumentError('this worker has no barrier option', 'barrier');
    if (this.barrier instanceof DoubleBarrier) await this.barrier.leave(options);
    else await this.barrier.leave();
  }

  /**
   * Opens a window of `ms` in which no worker of the queue starts a job
   * (BullMQ's Worker.rateLimit); throw `Worker.RateLimitError()` from the
   * processor next to put the current job back.
   */
  async rateLimit(ms: number): Promise<void> {
    await this.waitUntilReady();
    await setRateLimit(this.store as QueueStore, ms);
  }

  /** Stops claiming on this worker (jobs in flight finish). */
  async pause(doNotWaitActive = false): Promise<void> {
    this.localPaused = true;
    this.emit('paused');
    if (doNotWaitActive) return;
    // a claim under way may still get jobs: as BullMQ's pause, wait for them too (an idle wait ends now)
    this.source?.poke();
    await this.claiming?.catch(() => undefined);
    await Promise.all([...this.attempts.values()].map((a) => a.done));
  }

  resume(): void {
    this.localPaused = false;
    this.emit('resumed');
    this.nudge();
  }

  /**
   * Stops claiming, lets jobs in flight finish and record their results,
   * then disconnects. `force` aborts them instead (their processors' signals
   * fire; their threads are terminated) and waits for no write; their claims
   * end with the session, so other workers run them again.
   *
   * Bounded when ZooKeeper is out of reach: once it has answered nothing for
   * `closeTimeout` ms (default 5000), the close goes on as a forced one and
   * drops the session without waiting; the claims of the jobs it aborted
   * lapse when ZooKeeper expires that session. `close(true)` waits at most
   * a second (for the server to confirm the session's end).
   */
  close(force = false): Promise<void> {
    if (force) {
      this.forced = true;
      this.quit.resolve();
    }
    if (this.closing) {
      if (force) for (const a of this.attempts.values()) a.abort();
      return this.closing;
    }
    this.emit('closing', 'closing');
    this.closing = (async () => {
      this.closeSignal.abort();
      this.started.reject(new ClosedError(`worker of '${this.name}'`)); // no-op once started
      this.nudge();
      if (force) for (const a of this.attempts.values()) a.abort();
      const answered = new AbortController();
      const closeTimeout = this.opts.closeTimeout ?? DEFAULT_CLOSE_TIMEOUT_MS;
      void untilSilent(() => this.session, closeTimeout, answered.signal).then(() => this.quit.resolve());
      const gaveUp = await Promise.race([this.drain().then(() => false), this.quit.promise.then(() => true)]);
      answered.abort();
      if (gaveUp) this.abandon();
      await this.pool?.close();
      this.sessionClosing = true;
      const wait = force ? Math.min(FORCED_SESSION_CLOSE_MS, closeTimeout) : gaveUp ? 0 : undefined;
      await this.session?.close({ timeout: wait });
      this.emit('closed');
    })();
    return this.closing;
  }

  /** What close() waits for while ZooKeeper answers: the claim loop, the jobs in flight, their writes. */
  private async drain(): Promise<void> {
    await this.running?.catch(() => undefined);
    this.source?.leaveLine();
    await Promise.all([...this.attempts.values()].map((a) => a.done));
    await this.collector?.close();
    this.cancels?.close();
    await this.renewer?.stop();
    this.trimmer?.stop();
    await this.housekeeper?.close().catch(() => undefined);
  }

  /**
   * close() stops waiting for ZooKeeper: the jobs still running are aborted
   * as by a forced close, and what runs in the background stops here; writes
   * under way fail once the session is closed.
   */
  private abandon(): void {
    this.forced = true;
    for (const a of this.attempts.values()) a.abort();
    this.source?.leaveLine();
    this.cancels?.close();
    void this.renewer?.stop();
    this.trimmer?.stop();
    void this.housekeeper?.close().catch(() => undefined);
  }
}
