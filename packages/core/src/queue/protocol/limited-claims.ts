/**
 * Claims under a global limit: a global concurrency N, a rate limit
 * (`max` jobs per `duration`), or a manual window. Without any, claims take
 * the plain path (claim.ts) and pay nothing for this.
 *
 * One transaction admits a group of jobs and records the admission, so no
 * interleaving of workers can over-admit:
 *
 * - **Concurrency.** Each job of the group creates a free EPHEMERAL slot
 *   `slots/s-<k>`, k < N, beside its claim node: the create is the
 *   test-and-set (a slot taken meanwhile fails the transaction), so at most N
 *   slots exist. A slot is named in its claim node and deleted in the same
 *   transaction as that node (finish, revocation), or vanishes with it when
 *   the session ends; a re-claim after an expiry creates both again or
 *   nothing. No new job is admitted while a slot of a larger, earlier N is
 *   held, nor beyond N minus the claim nodes listed (jobs started before the
 *   limit was set hold no slot and count that way).
 * - **Rate.** The window is written in the same transaction at the versions
 *   read: counted up (the window node checked, `count` + the group written,
 *   never past `max`), or, once it has ended, the next one opened (the window
 *   node rewritten: its mtime is the new start). Neither node is ever
 *   deleted, so no version repeats. A worker that raced it fails and reads
 *   again. A window is
 *   judged ended only on ZooKeeper's own time (`serverNow`, a write to the
 *   clock node, made only then); a live one is judged on the ServerClock
 *   estimate, which only sets how long a limited worker waits. So every job
 *   counted in a window started (its claim committed) after that window
 *   opened and before the next one opened, which is at least `duration`
 *   later: the starts split into consecutive spans of at least `duration`,
 *   each with at most `max` of them.
 * - **Settings.** The group also checks the `settings` node at the version
 *   its limits were read from: a limit changed meanwhile fails it.
 * - **Pause.** And the pause flag at the version it was read unset: a pause
 *   that committed first fails it, and its candidates are left.
 *
 * The admitted jobs' records are read and settled as a plain claim's
 * (claim.ts `settleClaims`), in the claim's flight where that is safe
 * (claim-read.ts).
 */
import { NodeExistsError, NoNodeError, type ZooKeeperError } from '../../zk/errors.js';
import { opBytes } from '../../zk/session.js';
import type { OpResult } from '../../zk/types.js';
import { pauseCheckOp, settingsCheckOp, type WindowWrite, windowOps } from './builders.js';
import {
  type Candidate,
  type ClaimOptions,
  type ClaimResult,
  type CommittedClaim,
  isConflict,
  type PreparedClaim,
  prepareClaims,
  preparedClaimOps,
  settleClaims,
  tokenOfReply,
} from './claim.js';
import { BesideReads } from './claim-read.js';
import type { ProtocolContext } from './context.js';
import { type ProtocolOp, TX_BYTE_BUDGET, type TxUnit } from './executor.js';
import {
  countData,
  effectiveLimits,
  MANUAL_WINDOW_COUNT,
  newWindowId,
  parseSettings,
  parseWindow,
  type RateLimit,
  type Settings,
  type WindowState,
  windowData,
  windowStartNow,
} from './limits.js';

/** What a limited claim reads first, in one request. */
export interface LimitState {
  settings: Settings | undefined;
  window: WindowState | undefined;
  /** Names of the slots held. */
  slots: string[];
  /** Claim nodes: the active jobs. */
  active: number;
}

/** Reads settings, window, slots and claims in one read-only multi (a missing slots directory is made). */
export async function readLimitState(store: ProtocolContext): Promise<LimitState> {
  const { session, layout } = store;
  const [settings, window, count, slots, claims] = await session.readMulti([
    { op: 'getData', path: layout.settings },
    { op: 'getData', path: layout.limiter },
    { op: 'getData', path: layout.limiterCount },
    { op: 'getChildren', path: layout.slotsDir },
    { op: 'getChildren', path: layout.claimsDir },
  ] as const);
  for (const r of [settings, window, count, slots, claims]) {
    if (!r.ok && !(r.error instanceof NoNodeError)) throw r.error;
  }
  const fields = settings.ok ? parseSettings(settings.data) : undefined;
  if (!slots.ok && effectiveLimits(fields).concurrency) {
    // made on first use; a create into a deleted queue fails (NoNode) and brings nothing back
    await session.create(layout.slotsDir).catch((err) => {
      if (!(err instanceof NodeExistsError)) throw err;
    });
  }
  return {
    settings: settings.ok && fields ? { fields, version: settings.stat.version } : undefined,
    window: window.ok && count.ok ? parseWindow(window, count) : undefined,
    slots: slots.ok ? slots.children : [],
    active: claims.ok ? claims.children.length : 0,
  };
}

/** How a window is written by the group admitted: `count` jobs were in it before (0 for a new one). */
export interface WindowPlan {
  kind: 'open' | 'count' | 'reopen';
  /** The versions read of the window node and of its count (-1: none yet). */
  version: number;
  countVersion: number;
  count: number;
  ms: number;
  id: string;
}

/** What a worker may claim now. */
export type Admission =
  /** Rate limited for `ttl` ms more (on the ServerClock estimate). */
  | { kind: 'rate'; ttl: number }
  /** Global concurrency reached: wait for a slot. */
  | { kind: 'maxed'; concurrency: number }
  /** The window looks ended: ask ZooKeeper's time, and decide again with it. */
  | { kind: 'confirm' }
  | {
      kind: 'open';
      /** Most jobs this claim may take. */
      capacity: number;
      /** Free slots to take (shuffled), under a global concurrency. */
      slots?: string[];
      window?: WindowPlan;
      /** The settings version the limits were read from. */
      settingsVersion?: number;
    };

/**
 * Decides a claim of up to `want` jobs from the state read, `now` being
 * ZooKeeper's time (`exact`) or the ServerClock's estimate of it. Pure.
 */
export function admit(
  state: LimitState,
  limiter: RateLimit | undefined,
  want: number,
  now: number,
  exact: boolean,
): Admission {
  const limits = effectiveLimits(state.settings?.fields, limiter);
  let capacity = want;
  let window: WindowPlan | undefined;
  // A counting window limits only rate-limited workers; a manual one limits all.
  const w = limits.rate || state.window?.manual ? state.window : undefined;
  // A window of 0 ms was ended on purpose; one that looks past its end is confirmed on ZooKeeper's time.
  const ended = w !== undefined && (w.ms <= 0 || w.start + w.ms <= now);
  if (w && ended && w.ms > 0 && !exact) return { kind: 'confirm' };
  if (w && !ended) {
    const max = limits.rate?.max ?? MANUAL_WINDOW_COUNT;
    // what is left of the window, never more than the window (the server's time is estimated here)
    if (w.count >= max) return { kind: 'rate', ttl: Math.min(w.ms, Math.max(1, Math.ceil(w.start + w.ms - now))) };
    if (limits.rate) {
      capacity = Math.min(capacity, max - w.count);
      window = { kind: 'count', version: w.version, countVersion: w.countVersion, count: w.count, ms: w.ms, id: w.id };
    }
  } else if (limits.rate) {
    capacity = Math.min(capacity, limits.rate.max);
    const id = newWindowId();
    window = w
      ? { kind: 'reopen', version: w.version, countVersion: w.countVersion, count: 0, ms: limits.rate.duration, id }
      : { kind: 'open', version: -1, countVersion: -1, count: 0, ms: limits.rate.duration, id };
  }
  const open: Admission & { kind: 'open' } = { kind: 'open', capacity };
  if (limits.concurrency) {
    const slots = freeSlots(state, limits.concurrency, capacity);
    if (slots.length === 0) return { kind: 'maxed', concurrency: limits.concurrency };
    open.slots = slots;
    open.capacity = Math.min(capacity, slots.length);
  }
  if (window) open.window = window;
  if (state.settings) open.settingsVersion = state.settings.version;
  return open;
}

/**
 * Up to `want` free slot names below `n`, from a random offset (workers
 * spread instead of racing for s-0); none while a slot of a larger, earlier
 * N is held, or while the claims listed fill N.
 */
function freeSlots(state: LimitState, n: number, want: number): string[] {
  const held = new Set(state.slots);
  for (const name of held) if (slotIndex(name) >= n) return [];
  const room = Math.min(want, n - Math.max(state.active, held.size));
  const out: string[] = [];
  const offset = Math.floor(Math.random() * n);
  for (let i = 0; i < n && out.length < room; i++) {
    const name = `s-${(offset + i) % n}`;
    if (!held.has(name)) out.push(name);
  }
  return out;
}

function slotIndex(name: string): number {
  const k = Number(name.slice(2));
  return Number.isInteger(k) ? k : Number.POSITIVE_INFINITY;
}

export interface LimitedClaimResult extends ClaimResult {
  /** The limits changed between the read and the write (settings, window or slots): read again. */
  raced: boolean;
}

/** Bytes kept free in the transaction for the settings check, the window ops and the receipt. */
const LIMIT_OPS_RESERVE = 2048;

/**
 * Claims `candidates` (at most `admission.capacity` of them) in ONE
 * transaction with the admission's slots and window write.
 */
export async function claimLimited(
  store: ProtocolContext,
  candidates: Candidate[],
  o: ClaimOptions,
  admission: Admission & { kind: 'open' },
): Promise<LimitedClaimResult> {
  const result: LimitedClaimResult = { claimed: [], skipped: [], raced: false, left: [] };
  const wanted = candidates.slice(0, admission.capacity);
  result.left.push(...candidates.slice(admission.capacity));
  if (o.held?.()) {
    result.left.push(...wanted);
    return result;
  }
  const prepared = prepareClaims(wanted, o);
  const group = new Group(store, o, admission);
  let bytes = LIMIT_OPS_RESERVE;
  for (const c of prepared) {
    const size = group.sizeOf(c);
    if (group.members.length > 0 && bytes + size > TX_BYTE_BUDGET) result.left.push(c.candidate);
    else if (!group.add(c)) result.left.push(c.candidate);
    else bytes += size;
  }
  if (group.members.length === 0) return result;
  const claimedAt = performance.now();
  const beside = new BesideReads<PreparedClaim>(store.session, store.layout);
  const [written] = await store.executor.run([group.unit()], {
    onConflict: (_unit, err, op) => group.conflict(err, op),
    // the members' records read in the claim's flight, used as a plain claim's are (claim-read.ts)
    sent: () => beside.sent(group.members),
  });
  result.skipped.push(...group.dropped);
  result.raced = group.raced;
  if (group.paused) {
    // paused meanwhile: nobody took these, they wait for the resume
    result.left.push(...group.members.map((m) => m.claim.candidate));
  } else if (written?.ok) {
    await settleClaims(store, group.committed(written.results, beside), claimedAt, result);
  } else if (!group.raced && group.members.length > 0 && written) {
    throw written.error; // not a conflict of one job: a real failure
  }
  return result;
}

interface Member {
  claim: PreparedClaim;
  slot?: string | undefined;
}

/** The jobs one limited claim transaction admits; shrinks as conflicts name members. */
class Group {
  readonly members: Member[] = [];
  readonly dropped: { candidate: Candidate; error?: unknown }[] = [];
  raced = false;
  /** Where each member's ops start in the transaction last built. */
  private readonly starts = new Map<Member, number>();
  /** The pause flag moved on since it was read unset: the group claimed nothing. */
  paused = false;
  private readonly slots: string[];
  /** The version of `meta` the pause flag was read unset at, checked once per transaction. */
  private readonly pauseVersion: number | undefined;

  constructor(
    private readonly store: ProtocolContext,
    o: ClaimOptions,
    private readonly admission: Admission & { kind: 'open' },
  ) {
    this.slots = [...(admission.slots ?? [])];
    this.pauseVersion = o.pauseVersion?.();
  }

  /** Adds a member with a slot when one is needed; false when none is left. */
  add(claim: PreparedClaim): boolean {
    if (!this.admission.slots) {
      this.members.push({ claim });
      return true;
    }
    const slot = this.slots.shift();
    if (!slot) return false;
    this.members.push({ claim, slot });
    return true;
  }

  sizeOf(claim: PreparedClaim): number {
    const ops = preparedClaimOps(this.store, claim, this.limitsOf({ claim, slot: 's-0' }));
    const ns = this.store.session.namespace;
    return ops.reduce((n, op) => n + opBytes(op, ns), 0) + Buffer.byteLength(JSON.stringify(claim.events)) + 8;
  }

  private limitsOf(m: Member): { slot?: string; window?: string } {
    const w = this.admission.window;
    return { ...(m.slot ? { slot: m.slot } : {}), ...(w ? { window: w.id } : {}) };
  }

  private ops(): ProtocolOp[] {
    const { layout } = this.store;
    const ops: ProtocolOp[] = [];
    if (this.pauseVersion !== undefined) ops.push(pauseCheckOp(layout, this.pauseVersion));
    if (this.admission.settingsVersion !== undefined) ops.push(settingsCheckOp(layout, this.admission.settingsVersion));
    const w = this.admission.window;
    if (w) {
      const count = countData(w.count + this.members.length);
      const window = windowData(w.ms, w.id, false, windowStartNow(this.store));
      const write: WindowWrite =
        w.kind === 'open'
          ? { kind: 'open', window, count }
          : w.kind === 'count'
            ? { kind: 'count', version: w.version, countVersion: w.countVersion, count }
            : { kind: 'reopen', version: w.version, countVersion: w.countVersion, window, count };
      ops.push(...windowOps(layout, write));
    }
    this.starts.clear();
    for (const m of this.members) {
      this.starts.set(m, ops.length);
      ops.push(...preparedClaimOps(this.store, m.claim, this.limitsOf(m)));
    }
    return ops;
  }

  unit(): TxUnit {
    const ops = this.ops();
    const events = this.members.flatMap((m) => m.claim.events);
    return { build: () => ({ ops, events }) };
  }

  /** The members' claims as committed, each with the token its reply gave (`results`: the unit's) and the read beside it. */
  committed(results: readonly OpResult[] | undefined, beside: BesideReads<PreparedClaim>): CommittedClaim[] {
    return this.members.map((m) => {
      const start = this.starts.get(m);
      return {
        claim: m.claim,
        token: start === undefined ? undefined : tokenOfReply(results?.slice(start)),
        beside: beside.of(m.claim),
        ...this.limitsOf(m),
      };
    });
  }

  /** A failed op: the group without what it names, or undefined to give up (read again). */
  conflict(err: ZooKeeperError, op: ProtocolOp): TxUnit | undefined {
    const { layout } = this.store;
    if (op.path === layout.meta) {
      this.paused = true;
      return undefined;
    }
    if (op.path === layout.settings || op.path === layout.limiter || op.path === layout.limiterCount) {
      this.raced = true;
      return undefined;
    }
    if (op.path.startsWith(`${layout.slotsDir}/`)) {
      const m = this.members.find((x) => x.slot && layout.slot(x.slot) === op.path);
      if (!m || !(err instanceof NodeExistsError)) {
        this.raced = true;
        return undefined;
      }
      m.slot = this.slots.shift();
      if (!m.slot) this.drop(m);
      return this.members.length > 0 ? this.unit() : undefined;
    }
    const m = this.members.find((x) => this.opsOf(x).some((o) => o.path === op.path));
    if (!m) return undefined;
    this.drop(m, isConflict(err) ? undefined : err);
    return this.members.length > 0 ? this.unit() : undefined;
  }

  private opsOf(m: Member): ProtocolOp[] {
    return preparedClaimOps(this.store, m.claim, this.limitsOf(m));
  }

  private drop(m: Member, error?: unknown): void {
    this.members.splice(this.members.indexOf(m), 1);
    if (m.slot) this.slots.push(m.slot);
    this.dropped.push({ candidate: m.claim.candidate, ...(error === undefined ? {} : { error }) });
  }
}
