/**
 * The soak's producer: enqueues jobs through `Queue.add`/`addBulk` and logs
 * each acknowledged enqueue (in acknowledgement order), each enqueue that
 * threw, and each re-add of an existing custom id. Every job is named
 * `j<seq>` so that a job found in ZooKeeper can be traced to its enqueue.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { JobsOptions } from '@zkq/core';
import type { Queue } from '@zkq/producer';
import {
  dataHash,
  type EnqueueEvent,
  type NdjsonLog,
  type ReaddEvent,
  type SoakHistory,
  type UnackedEnqueueEvent,
} from './history.js';
import type { Rng } from './rng.js';

interface Spec {
  seq: number;
  name: string;
  data: unknown;
  opts: JobsOptions;
}

/** Finished jobs stay, so that every job can be checked at the end. */
const KEEP = { removeOnComplete: false, removeOnFail: false } as const;

export class Producer {
  private seq = 0;
  private readonly customIds: { id: string; seq: number }[] = [];

  constructor(
    private readonly rng: Rng,
    private readonly log: NdjsonLog,
    private readonly history: Pick<SoakHistory, 'enqueues' | 'unacked' | 'readds'>,
  ) {}

  /** The next sequence number (job `j<seq>`); flows take theirs here too, so names stay unique. */
  nextSeq(): number {
    return ++this.seq;
  }

  /** Data of 1 B to 300 KB, mostly small. */
  private data(seq: number): unknown {
    const r = this.rng.next();
    if (r < 0.25) return seq % 10;
    const bytes =
      r < 0.7
        ? this.rng.int(8, 2048)
        : r < 0.92
          ? this.rng.int(2048, 32_768)
          : r < 0.98
            ? this.rng.int(32_768, 131_072)
            : this.rng.int(131_072, 300_000);
    const head = `${seq}:`;
    return head + 'x'.repeat(Math.max(0, bytes - head.length - 2));
  }

  /** A job with retries (1-3 attempts, backoff), delays (0-3 s), a few priorities and some custom ids. */
  private chaosSpec(): Spec {
    const seq = this.nextSeq();
    const attempts = this.rng.pick([1, 1, 2, 3]);
    const opts: JobsOptions = { ...KEEP, attempts, priority: this.rng.pick([0, 0, 0, 1, 2, 10]) };
    if (attempts > 1) {
      opts.backoff = this.rng.pick([200, { type: 'fixed', delay: 300 }, { type: 'exponential', delay: 150 }]);
    }
    if (this.rng.chance(0.3)) opts.delay = this.rng.int(50, 3000);
    if (this.rng.chance(0.1)) opts.jobId = `c${seq}`;
    return { seq, name: `j${seq}`, data: this.data(seq), opts };
  }

  /** One priority lane of two, no delay, one attempt, small data. */
  private fifoSpec(): Spec {
    const seq = this.nextSeq();
    const opts: JobsOptions = { ...KEEP, priority: this.rng.pick([0, 0, 4]) };
    return { seq, name: `j${seq}`, data: `${seq}:${'x'.repeat(this.rng.int(0, 200))}`, opts };
  }

  /** Enqueues `specs` in one call (add for one, addBulk for more); records the outcome. */
  private async enqueue(queue: Queue, specs: Spec[]): Promise<void> {
    const q = queue.name;
    try {
      const jobs =
        specs.length === 1
          ? [await queue.add(specs[0]?.name as string, specs[0]?.data, specs[0]?.opts)]
          : await queue.addBulk(specs.map((s) => ({ name: s.name, data: s.data, opts: s.opts })));
      const ts = Date.now();
      specs.forEach((s, i) => {
        const id = jobs[i]?.id as string;
        const e: EnqueueEvent = {
          k: 'enqueue',
          q,
          id,
          seq: s.seq,
          priority: s.opts.priority ?? 0,
          delay: s.opts.delay ?? 0,
          attempts: s.opts.attempts ?? 1,
          custom: s.opts.jobId !== undefined,
          hash: dataHash(s.data),
          bytes: Buffer.byteLength(JSON.stringify(s.data)),
          ts,
        };
        this.history.enqueues.push(e);
        this.log.append(e);
        if (s.opts.jobId) this.customIds.push({ id, seq: s.seq });
      });
    } catch (err) {
      const e: UnackedEnqueueEvent = {
        k: 'enqueue-unacked',
        q,
        seqs: specs.map((s) => s.seq),
        hashes: specs.map((s) => dataHash(s.data)),
        error: (err as Error).message,
        ts: Date.now(),
      };
      this.history.unacked.push(e);
      this.log.append(e);
    }
  }

  /** Adds an existing custom id again: must resolve with the existing job and change nothing. */
  private async readd(queue: Queue): Promise<void> {
    const { id, seq } = this.rng.pick(this.customIds);
    let ok = false;
    try {
      ok = (await queue.add(`j${seq}`, null, { ...KEEP, jobId: id })).id === id;
    } catch {
      // unacknowledged: nothing to check
    }
    const e: ReaddEvent = { k: 'readd', q: queue.name, id, ok, ts: Date.now() };
    this.history.readds.push(e);
    this.log.append(e);
  }

  /**
   * A batch of large records (200-300 KB) in one lane, due now, enqueued
   * together: any worker with a few free slots finds several at the head.
   */
  private largeBurst(): Spec[] {
    return Array.from({ length: this.rng.int(8, 12) }, () => {
      const seq = this.nextSeq();
      const data = `${seq}:${'x'.repeat(this.rng.int(200_000, 300_000))}`;
      return { seq, name: `j${seq}`, data, opts: { ...KEEP, priority: 0 } };
    });
  }

  /**
   * Enqueues at about `perSecond` jobs/s until `stop()` is true, one call at
   * a time, and the large batch once, at `largeAt` (ms since epoch).
   */
  async runChaos(
    queue: Queue,
    perSecond: number,
    largeAt: number,
    stop: () => boolean,
    announce: (line: string) => void,
  ): Promise<void> {
    const t0 = Date.now();
    let largeDone = false;
    let sent = 0;
    while (!stop()) {
      if (!largeDone && Date.now() >= largeAt) {
        largeDone = true;
        const burst = this.largeBurst();
        await this.enqueue(queue, burst);
        announce(`large batch: ${burst.length} jobs of 200-300 KB (${burst[0]?.name}..${burst.at(-1)?.name})`);
        sent += burst.length;
        continue;
      }
      if (this.customIds.length > 0 && this.rng.chance(0.03)) {
        await this.readd(queue);
        continue;
      }
      // Now and then a burst, so that a backlog builds and workers claim many jobs at once.
      const n = this.rng.chance(0.03) ? this.rng.int(100, 300) : this.rng.chance(0.4) ? 1 : this.rng.int(2, 40);
      await this.enqueue(
        queue,
        Array.from({ length: n }, () => this.chaosSpec()),
      );
      sent += n;
      const ahead = t0 + (sent / perSecond) * 1000 - Date.now();
      if (ahead > 0) await sleep(ahead);
    }
  }

  /** Enqueues `count` FIFO-phase jobs one call after another (so acknowledgement order is enqueue order). */
  async runFifo(queue: Queue, count: number): Promise<void> {
    let left = count;
    while (left > 0) {
      const n = Math.min(left, this.rng.chance(0.5) ? 1 : this.rng.int(2, 20));
      await this.enqueue(
        queue,
        Array.from({ length: n }, () => this.fifoSpec()),
      );
      left -= n;
      if (this.rng.chance(0.3)) await sleep(this.rng.int(1, 30));
    }
  }
}
