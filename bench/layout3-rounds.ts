/**
 * The claim rounds of the layout 3 probe (layout3-probe.ts), and the drain
 * that runs them with the finishes beside, on one or more sessions.
 *
 * - today: layout 2's claim, as it was before the claim by create (built
 *   here, `layout2ClaimOps`): a read-only multi of the records, then the
 *   claim multi (pointer checked, claim created, record rewritten at its
 *   version, whose new version is the token): two round trips in series;
 *   `today-blind` the same claim multi without the read (versions known);
 * - layout 3 `set`: ONE multi (claim created, state node written at version
 *   -1: the reply's version is the token) sent in the same flight as the
 *   read-only multi of the bodies;
 * - layout 3 `create`: the claim multi only creates the claim nodes (the
 *   token would be the create's stat, create2's reply; see the probe).
 *
 * Each claim multi starts with the pause check and ends with a receipt, as
 * the executor's do. Candidates are known in advance: neither layout lists
 * the head here.
 */
import type { Op, OpResult } from '@zkq/core';
import {
  CLAIM_READ_BATCH,
  claimPayload,
  decodeRecord,
  encodeRecord,
  MAX_OPS,
  pauseCheckOp,
  type QueueLayout,
} from '@zkq/core/internal';
import { type ProbeJob, type ProbeQueue, todayRecord, WORKER_ID } from './layout3-jobs.js';

export type RoundStyle = 'today' | 'today-blind' | 'set' | 'create';

/** Lease written in claims, ms. */
const LOCK_DURATION = 30_000;
/** Finish multis in flight per session, as the drain's worker keeps them. */
const FINISHES_IN_FLIGHT = 2;
const ACTIVE_STATE = Buffer.from(JSON.stringify({ s: 'active', w: WORKER_ID }));
const L3_CLAIM = Buffer.from(JSON.stringify({ worker: WORKER_ID, lockDuration: LOCK_DURATION }));

/** A claimed job and its token. */
interface Claimed {
  job: ProbeJob;
  token: number;
}

/** Claims `jobs` (one round) on `q`'s session; resolves with their tokens. */
export function claimRound(q: ProbeQueue, style: RoundStyle, jobs: readonly ProbeJob[]): Promise<Claimed[]> {
  if (style === 'today' || style === 'today-blind') return todayRound(q, jobs, style === 'today-blind');
  return layout3Round(q, style, jobs);
}

/**
 * Today's round. `blind`: the claim multi alone, its records and versions
 * known without reading (as added, version 0): the same ops in one round trip.
 */
async function todayRound(q: ProbeQueue, jobs: readonly ProbeJob[], blind = false): Promise<Claimed[]> {
  const { session, layout } = q;
  const now = Date.now();
  const replies = blind
    ? jobs.map((j) => ({ ok: true as const, data: todayRecord(Number(j.id) - 1, now), stat: { version: 0 } }))
    : await session.readMulti(jobs.map((j) => ({ op: 'getData' as const, path: layout.job(j.id) })));
  const ops: Op[] = [pauseCheckOp(layout, 0)];
  const claimed: Claimed[] = jobs.map((job, k) => {
    const reply = replies[k];
    if (!reply?.ok) throw new Error(`record of job ${job.id} not read`);
    const record = decodeRecord(reply.data, layout.job(job.id));
    const updated = {
      ...record,
      state: 'active' as const,
      attemptsStarted: record.attemptsStarted + 1,
      processedOn: now,
      processedBy: WORKER_ID,
    };
    const token = reply.stat.version + 1;
    const claim = claimPayload({ worker: WORKER_ID, token, lockDuration: LOCK_DURATION });
    const c = { id: job.id, pointer: job.node, version: reply.stat.version, record: encodeRecord(updated), claim };
    ops.push(...layout2ClaimOps(layout, c));
    return { job, token };
  });
  q.claimOpsSent += ops.length + 1;
  await sendWithReceipt(q, ops);
  return claimed;
}

async function layout3Round(q: ProbeQueue, style: 'set' | 'create', jobs: readonly ProbeJob[]): Promise<Claimed[]> {
  const { session, layout } = q;
  const ops: Op[] = [pauseCheckOp(layout, 0)];
  for (const j of jobs) {
    ops.push({ op: 'create', path: layout.claim(j.id), data: L3_CLAIM, mode: 'ephemeral' });
    if (style === 'set') ops.push({ op: 'setData', path: j.state as string, data: ACTIVE_STATE, version: -1 });
  }
  q.claimOpsSent += ops.length + 1;
  // the read first: it is answered at once, the claim once committed; neither waits for the other to be sent
  const read = session.readMulti(jobs.map((j) => ({ op: 'getData' as const, path: j.node })));
  const [bodies, results] = await Promise.all([read, sendWithReceipt(q, ops)]);
  return jobs.map((job, k) => {
    const body = bodies[k];
    if (!body?.ok) throw new Error(`body of job ${job.id} not read`);
    JSON.parse(body.data.toString('utf8')); // what the worker does with it
    const stat = style === 'set' ? (results[2 + 2 * k] as { stat: { version: number } }).stat : undefined;
    return { job, token: stat?.version ?? 0 };
  });
}

/**
 * Layout 2's claim of one job, the probe's baseline (the protocol's claim
 * no longer reads or writes the record): the ready pointer checked, the
 * claim created, the record rewritten at the version read.
 */
function layout2ClaimOps(
  layout: QueueLayout,
  c: { id: string; pointer: string; version: number; record: Buffer; claim: Buffer },
): Op[] {
  return [
    { op: 'check', path: c.pointer, version: 0 },
    { op: 'create', path: layout.claim(c.id), data: c.claim, mode: 'ephemeral' },
    { op: 'setData', path: layout.job(c.id), data: c.record, version: c.version },
  ];
}

/** `ops` plus a receipt, sent; the receipt is deleted later, as the executor's clean-up does. */
async function sendWithReceipt(q: ProbeQueue, ops: Op[]): Promise<OpResult[]> {
  const receipt = q.receipt();
  const results = await q.session.multi([...ops, { op: 'create', path: receipt }]);
  q.receipts.push(receipt);
  return results;
}

/**
 * The finish of a job removed on completion: its record (today) or state
 * node (layout 3) deleted at the token, its pointer or body, its claim.
 */
export function removalOps(q: ProbeQueue, style: RoundStyle, c: Claimed): Op[] {
  const { layout } = q;
  if (style === 'today' || style === 'today-blind') {
    // layout 2's finish of a removed job: the record at the token, the pointer, the claim
    return [
      { op: 'delete', path: layout.job(c.job.id), version: c.token },
      { op: 'delete', path: c.job.node },
      { op: 'delete', path: layout.claim(c.job.id) },
    ];
  }
  const ops: Op[] = [];
  if (c.job.state) ops.push({ op: 'delete', path: c.job.state, version: c.token });
  ops.push({ op: 'delete', path: c.job.node }, { op: 'delete', path: layout.claim(c.job.id) });
  return ops;
}

/**
 * One session's finishes: each round's jobs are handed over as they are
 * claimed (run at once, no-op), sent in one multi per round, at most
 * FINISHES_IN_FLIGHT at once; rounds handed over while those are in flight
 * share the next multi. Each finish multi also deletes the receipts of
 * settled multis (as the executor's clean-up, in batches).
 */
class Finishes {
  private waiting: { ops: Op[]; sent: () => void }[] = [];
  private inFlight = 0;
  private readonly written: Promise<unknown>[] = [];

  constructor(private readonly q: ProbeQueue) {}

  /** Resolves once `ops` are sent (not written): a round waits for that, no longer. */
  hand(ops: Op[]): Promise<void> {
    return new Promise((sent) => {
      this.waiting.push({ ops, sent });
      this.flush();
    });
  }

  private flush(): void {
    while (this.inFlight < FINISHES_IN_FLIGHT && this.waiting.length > 0) {
      const ops: Op[] = [];
      while (this.waiting.length > 0 && ops.length + (this.waiting[0]?.ops.length ?? 0) < MAX_OPS) {
        const w = this.waiting.shift() as { ops: Op[]; sent: () => void };
        ops.push(...w.ops);
        w.sent();
      }
      for (const path of this.q.receipts.splice(0, CLAIM_READ_BATCH)) ops.push({ op: 'delete', path });
      this.inFlight++;
      const sent = sendWithReceipt(this.q, ops).finally(() => {
        this.inFlight--;
        this.flush();
      });
      this.written.push(sent);
    }
  }

  /** Every finish handed over, written. */
  async settled(): Promise<void> {
    while (this.written.length > 0) await this.written.shift();
  }
}

export interface DrainOptions {
  style: RoundStyle;
  /** Queues to claim from, one per session (all over the same jobs' queue name). */
  queues: ProbeQueue[];
  /** Claim rounds in flight per session. */
  lanes: number;
  /** Jobs per round. */
  batch: number;
  /** Finish each round's jobs beside the claims (the drain); else only claim them. */
  finish: boolean;
}

/**
 * Claims every job of `jobs`, `batch` per round, the rounds of each session's
 * lanes in flight together; with `finish`, until every finish is written.
 * Resolves with the number of rounds.
 */
export async function drain(jobs: readonly ProbeJob[], o: DrainOptions): Promise<number> {
  let next = 0;
  let rounds = 0;
  const lane = async (q: ProbeQueue, finishes: Finishes) => {
    while (next < jobs.length) {
      const taken = jobs.slice(next, next + o.batch);
      next += taken.length;
      const claimed = await claimRound(q, o.style, taken);
      rounds++;
      if (o.finish) await finishes.hand(claimed.flatMap((c) => removalOps(q, o.style, c)));
    }
  };
  await Promise.all(
    o.queues.map(async (q) => {
      const finishes = new Finishes(q);
      await Promise.all(Array.from({ length: o.lanes }, () => lane(q, finishes)));
      await finishes.settled();
    }),
  );
  return rounds;
}
