/**
 * Housekeeper: the work one elected worker does for the whole queue.
 *
 * Worker daemons join the election under `leader/` (LeaderElection). The
 * leader
 * - revokes claims whose lease expired while their owner's session lives (a
 *   hung or blocked worker: a dead one's claims vanish by themselves), every
 *   `stalledInterval` — see revokeClaim; the job is claimed again and fails
 *   past maxStalledCount;
 * - promotes delayed jobs when they are due: it sleeps until the earliest due
 *   time (at most PROMOTE_POLL_MS), woken early by watches on the delayed
 *   windows, and moves due jobs to ready in batched transactions.
 * Every write it makes carries `election.fence()`: a deposed leader (session
 * lost) fails its writes instead of racing the new one, so two leaders never
 * act at once. A promotion also deletes the delayed pointer, so a job is
 * never promoted twice.
 */
import { EventEmitter } from 'node:events';
import {
  DELAY_WINDOW_MS,
  dueOfDelayed,
  encodeRecord,
  idOfDelayed,
  type JobRecord,
  LeaderElection,
  NoNodeError,
  NotEmptyError,
  type Op,
  type QueueStore,
  revokeClaim,
} from '@zkq/core';

/** Longest sleep of the promoter while delayed jobs may exist, ms. */
const PROMOTE_POLL_MS = 1000;
/** Jobs per promotion transaction. */
const PROMOTE_BATCH = 50;

export interface HousekeeperEvents {
  elected: [];
  deposed: [];
  stalled: [jobId: string];
  promoted: [jobIds: string[]];
  error: [error: unknown];
}

export class Housekeeper extends EventEmitter<HousekeeperEvents> {
  private readonly election: LeaderElection;
  private stalledTimer: NodeJS.Timeout | undefined;
  private promoting: Promise<void> | undefined;
  private wakePromoter: (() => void) | undefined;
  private leading = false;

  constructor(
    private readonly store: QueueStore,
    workerId: string,
    private readonly stalledInterval: number,
  ) {
    super();
    this.election = new LeaderElection(store.session, store.layout.leaderDir, { id: workerId });
    this.election.on('elected', () => this.lead());
    this.election.on('deposed', () => this.stepDown());
  }

  get isLeader(): boolean {
    return this.leading;
  }

  async start(): Promise<void> {
    await this.election.start();
  }

  async close(): Promise<void> {
    this.stepDown();
    await this.promoting;
    await this.election.close();
  }

  private lead(): void {
    this.leading = true;
    this.emit('elected');
    this.stalledTimer = setInterval(() => {
      this.checkStalled().catch((err) => this.emit('error', err));
    }, this.stalledInterval);
    this.stalledTimer.unref();
    this.promoting = this.promoteLoop().catch((err) => {
      if (this.leading) this.emit('error', err);
    });
  }

  private stepDown(): void {
    if (!this.leading) return;
    this.leading = false;
    clearInterval(this.stalledTimer);
    this.wakePromoter?.();
    this.emit('deposed');
  }

  /** Revokes every claim whose lease has run out. */
  async checkStalled(): Promise<string[]> {
    const { session, layout } = this.store;
    const revoked: string[] = [];
    for (const id of await session.getChildren(layout.claimsDir)) {
      if (!this.leading) break;
      let claim: { leaseUntil: number; token: number };
      try {
        claim = JSON.parse((await session.getData(layout.claim(id))).data.toString());
      } catch {
        continue; // gone meanwhile, or not a claim of ours
      }
      if (!(claim.leaseUntil < Date.now())) continue;
      if (await revokeClaim(this.store, id, [this.election.fence()], claim.token)) {
        revoked.push(id);
        this.emit('stalled', id);
      }
    }
    return revoked;
  }

  private async promoteLoop(): Promise<void> {
    while (this.leading) {
      const nextDue = await this.promoteDue();
      if (!this.leading) return;
      const wait = Math.max(0, Math.min(PROMOTE_POLL_MS, (nextDue ?? Number.POSITIVE_INFINITY) - Date.now()));
      if (wait > 0) await this.sleep(wait);
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wakePromoter = done;
    });
  }

  private readonly onDelayedChange = (): void => this.wakePromoter?.();

  /** Promotes every due delayed job; resolves with the next due time, if any. */
  async promoteDue(): Promise<number | undefined> {
    const { session, layout } = this.store;
    const watch = { watch: this.onDelayedChange };
    const windows = (await session.getChildren(layout.delayedDir, watch)).sort();
    const now = Date.now();
    for (const w of windows) {
      const windowStart = Number(w.slice(2)) * DELAY_WINDOW_MS;
      if (windowStart > now) return windowStart; // its earliest job is due no sooner
      const path = `${layout.delayedDir}/${w}`;
      const sorted = (await this.store.children(path, this.onDelayedChange)).sort(
        (a, b) => dueOfDelayed(a) - dueOfDelayed(b),
      );
      const due = sorted.filter((n) => dueOfDelayed(n) <= Date.now());
      for (let i = 0; i < due.length && this.leading; i += PROMOTE_BATCH) {
        await this.promote(path, due.slice(i, i + PROMOTE_BATCH));
      }
      const rest = sorted.slice(due.length);
      if (rest.length > 0) return dueOfDelayed(rest[0] as string);
      if (windowStart + DELAY_WINDOW_MS <= now) await session.delete(path).catch(ignoreGoneOrFull);
    }
    return undefined;
  }

  /** Moves `names` (delayed pointers of one window) to ready, in one fenced transaction when possible. */
  private async promote(windowPath: string, names: string[]): Promise<void> {
    const prepared = await Promise.all(names.map((n) => this.promotionOps(windowPath, n)));
    const jobs = prepared.filter((p) => p !== undefined);
    if (jobs.length === 0) return;
    const fence = this.election.fence();
    const eventOp = this.store.events.op(
      jobs.map((j) => ({ event: 'waiting', jobId: j.id, prev: 'delayed', ts: Date.now() })),
    );
    try {
      const results = await this.store.session.multi([
        fence,
        ...jobs.flatMap((j) => j.ops),
        ...(eventOp ? [eventOp] : []),
      ]);
      this.store.events.afterWrite(results.map((r) => (r as { path?: string }).path));
      this.emit(
        'promoted',
        jobs.map((j) => j.id),
      );
    } catch (err) {
      if (jobs.length === 1 || (err as { opIndex?: number }).opIndex === 0) throw err; // one job, or not leader
      for (const j of jobs) {
        await this.store.session.multi([this.election.fence(), ...j.ops]).then(
          () => this.emit('promoted', [j.id]),
          (e) => {
            if ((e as { opIndex?: number }).opIndex === 0) throw e;
          },
        );
      }
    }
  }

  private async promotionOps(windowPath: string, name: string): Promise<{ id: string; ops: Op[] } | undefined> {
    const id = idOfDelayed(name);
    const stored = await this.store.getJob(id).catch(() => undefined);
    if (!stored) {
      // a pointer whose record is gone (removed meanwhile, or foreign): drop the pointer
      await this.store.session
        .multi([this.election.fence(), { op: 'delete', path: `${windowPath}/${name}` }])
        .catch(() => undefined);
      return undefined;
    }
    const record: JobRecord = { ...stored.record, state: 'waiting', due: undefined };
    const ready = await this.store.readyPointerOp(id, record.lane ?? 'p-0000000000');
    return {
      id,
      ops: [
        { op: 'delete', path: `${windowPath}/${name}` },
        { op: 'setData', path: this.store.layout.job(id), data: encodeRecord(record), version: stored.version },
        ready.op,
      ],
    };
  }
}

function ignoreGoneOrFull(err: unknown): void {
  if (!(err instanceof NoNodeError) && !(err instanceof NotEmptyError)) throw err;
}
