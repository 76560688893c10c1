/**
 * The soak's extras queue (docs/soak.md): what the chaos queue does not
 * exercise, on a queue of its own, rate-limited, so that each check stays
 * decidable. The feeder adds, about `perSecond` times a second:
 * - jobs that log hundreds of ~1 KB lines (keepLogs 50, 200 or 1000), then
 *   complete or fail; jobs that throw a ~300 KB error; jobs that return a
 *   value too large to store (3 attempts: they must fail after one run);
 * - jobs with a deduplication id, simple or with a `ttl`, each id added a
 *   few times in a row (so that adds are deduplicated) and again later;
 * - plain jobs, many of them delayed (promotion is judged on them);
 * and, besides, keeps three job schedulers (`every` 1.5-3 s, through BullMQ's
 * Queue on the ZooKeeper backend) from the start of the chaos phase to its
 * end. At the end it reads each deduplication id's key.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { createZooKeeperBackend, type ZooKeeperConnectionOptions } from '@zkq/bullmq';
import type { JobsOptions } from '@zkq/core';
import type { Queue } from '@zkq/producer';
import { withBackend } from 'bullmq';
import { EXTRA_LIMIT, EXTRA_QUEUE } from './extra-attempt.js';
import {
  type DedupAddEvent,
  dataHash,
  type EnqueueEvent,
  type ExtraData,
  type ExtrasHistory,
  type NdjsonLog,
  type SoakHistory,
  type UnackedEnqueueEvent,
} from './history.js';
import type { Rng } from './rng.js';

const { Queue: BullQueue } = withBackend(createZooKeeperBackend);
const KEEP = { removeOnComplete: false, removeOnFail: false } as const;
const SCHEDULERS = 3;

export function emptyExtras(): ExtrasHistory {
  return { q: EXTRA_QUEUE, limit: EXTRA_LIMIT, dedupAdds: [], schedulers: [], dedupKeys: [], jobs: {} };
}

export class ExtrasFeeder {
  private readonly dedupIds: { dedup: string; ttl?: number }[] = [];
  private bull: InstanceType<typeof BullQueue> | undefined;

  constructor(
    private readonly o: {
      rng: Rng;
      log: NdjsonLog;
      history: SoakHistory & { extras: ExtrasHistory };
      nextSeq: () => number;
      perSecond: number;
      /** Direct, for the schedulers (upserts and removals are not what is checked). */
      connection: ZooKeeperConnectionOptions;
    },
  ) {}

  /** Upserts the schedulers (each retried until it succeeds). */
  async startSchedulers(): Promise<void> {
    this.bull = new BullQueue(EXTRA_QUEUE, { connection: this.o.connection });
    for (let i = 0; i < SCHEDULERS; i++) {
      const id = `s${i}`;
      const every = this.o.rng.int(1500, 3000);
      const data: ExtraData = { x: 'tick', s: id };
      await retry(() => this.bull?.upsertJobScheduler(id, { every }, { name: `tick-${id}`, data, opts: KEEP }));
      this.o.history.extras.schedulers.push({ k: 'scheduler', id, every, upserted: Date.now() });
    }
  }

  async stopSchedulers(): Promise<void> {
    for (const s of this.o.history.extras.schedulers) {
      await retry(() => this.bull?.removeJobScheduler(s.id));
      s.removed = Date.now();
      this.o.log.append(s);
    }
    await this.bull?.close();
  }

  /** Adds extras jobs on `queue` (the producer's, proxied) until `stop()`. */
  async run(queue: Queue, stop: () => boolean): Promise<void> {
    const { rng } = this.o;
    while (!stop()) {
      const r = rng.next();
      if (r < 0.12)
        await this.add(queue, { x: 'logs', lines: rng.int(200, 600), ok: rng.chance(0.6) }, rng.pick([1, 2]));
      else if (r < 0.2) await this.add(queue, { x: 'big-error' }, rng.pick([1, 2]));
      else if (r < 0.24) await this.add(queue, { x: 'too-large' }, 3);
      else if (r < 0.6) await this.dedup(queue);
      else await this.add(queue, { x: 'plain' }, 1, rng.chance(0.6) ? rng.int(100, 3000) : 0);
      await sleep(rng.int(0, Math.round(2000 / this.o.perSecond)));
    }
  }

  /** A few adds of one deduplication id in a row: a new id, or one used before. */
  private async dedup(queue: Queue): Promise<void> {
    const { rng } = this.o;
    const reuse = this.dedupIds.length > 0 && rng.chance(0.3);
    const key = reuse
      ? rng.pick(this.dedupIds)
      : { dedup: `d${this.dedupIds.length}`, ...(rng.chance(0.5) ? { ttl: rng.int(1000, 4000) } : {}) };
    if (!reuse) this.dedupIds.push(key);
    for (let n = rng.int(1, 4); n > 0; n--) {
      const seq = this.o.nextSeq();
      const data: ExtraData = { x: 'dedup', seq };
      const opts: JobsOptions = { ...KEEP, deduplication: { id: key.dedup, ...(key.ttl ? { ttl: key.ttl } : {}) } };
      const sent = Date.now();
      const e: DedupAddEvent = {
        k: 'dedup-add',
        q: queue.name,
        dedup: key.dedup,
        ...(key.ttl ? { ttl: key.ttl } : {}),
        seq,
        sent,
        ts: 0,
      };
      try {
        const job = await queue.add(`j${seq}`, data, opts);
        e.id = job.id;
        e.own = job.name === `j${seq}`;
        e.ts = Date.now();
        if (e.own) {
          this.acked(queue.name, job.id, seq, data, opts, e.ts);
          this.o.history.extras.jobs[job.id] = { x: 'dedup' };
        }
      } catch (err) {
        e.ts = Date.now();
        this.unacked(queue.name, seq, data, err);
      }
      this.o.history.extras.dedupAdds.push(e);
      this.o.log.append(e);
      if (rng.chance(0.5)) await sleep(rng.int(0, 300));
    }
  }

  private async add(queue: Queue, data: ExtraData, attempts: number, delay = 0): Promise<void> {
    const seq = this.o.nextSeq();
    const d = { ...data, seq };
    const keepLogs = this.o.rng.pick([50, 200, 1000]);
    const opts: JobsOptions = {
      ...KEEP,
      attempts,
      ...(delay ? { delay } : {}),
      ...(data.x === 'logs' ? { keepLogs } : {}),
    };
    if (attempts > 1) opts.backoff = 200;
    try {
      const job = await queue.add(`j${seq}`, d, opts);
      this.acked(queue.name, job.id, seq, d, opts, Date.now());
      this.o.history.extras.jobs[job.id] = {
        x: data.x,
        ...(data.x === 'logs' ? { keepLogs, lines: data.lines as number } : {}),
      };
    } catch (err) {
      this.unacked(queue.name, seq, d, err);
    }
  }

  private acked(q: string, id: string, seq: number, data: ExtraData, opts: JobsOptions, ts: number): void {
    const e: EnqueueEvent = {
      k: 'enqueue',
      q,
      id,
      seq,
      priority: 0,
      delay: opts.delay ?? 0,
      attempts: opts.attempts ?? 1,
      custom: false,
      hash: dataHash(data),
      bytes: Buffer.byteLength(JSON.stringify(data)),
      ts,
    };
    this.o.history.enqueues.push(e);
    this.o.log.append(e);
  }

  private unacked(q: string, seq: number, data: ExtraData, err: unknown): void {
    const e: UnackedEnqueueEvent = {
      k: 'enqueue-unacked',
      q,
      seqs: [seq],
      hashes: [dataHash(data)],
      error: (err as Error).message,
      ts: Date.now(),
    };
    this.o.history.unacked.push(e);
    this.o.log.append(e);
  }

  /** Reads each deduplication id's key at the end: whether its node exists, and the job it keeps when live. */
  async readKeys(queue: Queue): Promise<void> {
    const session = await queue.client;
    const { QueueStore } = await import('@zkq/core/internal');
    const layout = new QueueStore(session, queue.name).layout;
    for (const k of this.dedupIds) {
      const exists = (await session.exists(layout.dedupKey(k.dedup))) !== null;
      const live = await queue.getDeduplicationJobId(k.dedup);
      this.o.history.extras.dedupKeys.push({ ...k, exists, live });
    }
  }
}

async function retry(f: () => Promise<unknown> | undefined): Promise<void> {
  for (let i = 0; ; i++) {
    try {
      await f();
      return;
    } catch (err) {
      if (i >= 20) throw err;
      await sleep(500);
    }
  }
}
