/**
 * A queue's global limits: its settings (global concurrency, rate limit) and
 * the rate-limit window, read and written for both front-ends.
 *
 * Settings live in the `settings` node, BullMQ's meta hash as a JSON object of
 * strings (`concurrency`, `max`, `duration`, and whatever else BullMQ keeps
 * there), written by compare-and-set so that concurrent writers of different
 * fields lose nothing; created on the first write, removed with its last field.
 *
 * The window is the `limiter` node {"ms","id"}: it opened at the node's mtime
 * (it is written only to open a window) and ends `ms` later, both ZooKeeper's
 * times; `limiter/count` holds the jobs started in it. Neither node is ever
 * deleted, so a version read is never seen again on another window (a
 * compare-and-set across a delete and a re-create could be fooled: both at
 * version 0). Claims count themselves in inside the claim transaction (see
 * limited-claims.ts). A manual window (`rateLimit(ms)`) counts
 * Number.MAX_SAFE_INTEGER: it limits every worker, as on BullMQ. An ended
 * window is left as it is; "ms": 0 ends one early. Readers judge a window on
 * ZooKeeper's clock: `store.serverNow()` (one small write) against its start.
 */
import { randomBytes } from 'node:crypto';
import { InvalidArgumentError } from '../../errors.js';
import { NoNodeError } from '../../zk/errors.js';
import type { Stat } from '../../zk/types.js';
import { windowOps } from './builders.js';
import type { ProtocolContext } from './context.js';
import { failWhenQueueGone } from './replan.js';
import type { ProtocolOp } from './units.js';

/** The count of a manual window: limited whatever the maximum. */
export const MANUAL_WINDOW_COUNT = Number.MAX_SAFE_INTEGER;

/** A rate limit: at most `max` jobs started per `duration` ms (BullMQ's RateLimiterOptions). */
export interface RateLimit {
  /** Most jobs started per `duration`, by all workers of the queue together. */
  max: number;
  /** The window, ms. */
  duration: number;
}

/** BullMQ's name for a rate limit. */
export type RateLimiterOptions = RateLimit;

/** The settings node's fields and version. */
export interface Settings {
  fields: Record<string, string>;
  version: number;
}

// ---- validation (at the public entries) ---------------------------------------------

/** Throws InvalidArgumentError unless `value` is an integer >= 1 (a concurrency, max or duration). */
export function validateLimit(value: unknown, name: string): asserts value is number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1 || value >= MANUAL_WINDOW_COUNT) {
    throw new InvalidArgumentError(`${name} must be a positive integer, got ${String(value)}`, name);
  }
}

/** Throws InvalidArgumentError unless `limiter` is `{ max, duration }` of positive integers. */
export function validateRateLimit(limiter: unknown, name = 'limiter'): asserts limiter is RateLimit {
  if (!limiter || typeof limiter !== 'object') {
    throw new InvalidArgumentError(`${name} must be { max, duration }`, name);
  }
  const l = limiter as Partial<RateLimit>;
  validateLimit(l.max, `${name}.max`);
  validateLimit(l.duration, `${name}.duration`);
}

/** Throws InvalidArgumentError unless `ms` is a finite number (a window length; 0 or less ends it). */
export function validateWindowMs(ms: unknown, name = 'expireTimeMs'): asserts ms is number {
  if (typeof ms !== 'number' || !Number.isFinite(ms)) {
    throw new InvalidArgumentError(`${name} must be a finite number of milliseconds`, name);
  }
}

// ---- settings -------------------------------------------------------------------------

export function parseSettings(data: Buffer): Record<string, string> {
  const fields: Record<string, string> = {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(data.toString() || '{}');
  } catch {
    return fields; // unreadable: no settings
  }
  if (parsed && typeof parsed === 'object') {
    for (const [k, v] of Object.entries(parsed)) if (typeof v === 'string') fields[k] = v;
  }
  return fields;
}

export async function readSettings(store: ProtocolContext): Promise<Settings | undefined> {
  try {
    const { data, stat } = await store.session.getData(store.layout.settings);
    return { fields: parseSettings(data), version: stat.version };
  } catch (err) {
    if (err instanceof NoNodeError) return undefined;
    throw err;
  }
}

/**
 * Applies `change` to the settings until a compare-and-set of the result
 * succeeds (another writer in between makes it read again). A lost reply
 * is read back by the receipt: planned again, `change` would see its own
 * write and answer otherwise (a field removed found gone), and sent again
 * as it was, it could land on a node deleted and made again at the version
 * read. `change` edits the fields and returns what the call answers.
 */
export async function updateSettings<T>(
  store: ProtocolContext,
  change: (fields: Record<string, string>) => T,
): Promise<T> {
  const path = store.layout.settings;
  return store.executor.runPlanned(
    async () => {
      const stored = await readSettings(store);
      const fields = { ...stored?.fields };
      const answer = change(fields);
      const data = Buffer.from(JSON.stringify(fields));
      const empty = Object.keys(fields).length === 0;
      const op: ProtocolOp | undefined = !stored
        ? empty
          ? undefined
          : { op: 'create', path, data }
        : empty
          ? { op: 'delete', path, version: stored.version }
          : JSON.stringify(stored.fields) !== JSON.stringify(fields)
            ? { op: 'setData', path, data, version: stored.version }
            : undefined;
      return op ? { answer, unit: { build: () => ({ ops: [op] }) } } : { answer };
    },
    // a missing queue fails the create (NoNode): settings never bring a deleted queue back
    { onFailure: failWhenQueueGone },
  );
}

/** A positive integer setting, or undefined when unset or not one (a value BullMQ wrote by hand). */
function intField(fields: Record<string, string> | undefined, name: string): number | undefined {
  const raw = fields?.[name];
  if (raw === undefined) return undefined;
  const n = Number(raw);
  return Number.isSafeInteger(n) && n >= 1 ? n : undefined;
}

/** The limits that apply to a worker: global concurrency, and the rate limit as BullMQ combines them. */
export interface EffectiveLimits {
  concurrency?: number;
  rate?: RateLimit;
}

/**
 * BullMQ's rule: the queue's `max` wins over the worker's, the worker's
 * `duration` over the queue's. A max without a duration limits nothing.
 */
export function effectiveLimits(fields: Record<string, string> | undefined, limiter?: RateLimit): EffectiveLimits {
  const out: EffectiveLimits = {};
  const concurrency = intField(fields, 'concurrency');
  if (concurrency) out.concurrency = concurrency;
  const max = intField(fields, 'max') ?? limiter?.max;
  const duration = limiter?.duration ?? intField(fields, 'duration');
  if (max && duration) out.rate = { max, duration };
  return out;
}

// ---- the window -------------------------------------------------------------------------

/** The window as stored: its length, id, start (the window node's mtime, or its `at`), count, and both versions. */
export interface WindowState {
  ms: number;
  id: string;
  /** Opened by `rateLimit(ms)`: limits every worker. */
  manual: boolean;
  start: number;
  version: number;
  count: number;
  countVersion: number;
}

/**
 * The window node's data. `at`: its start on the process's clock, written
 * only on a session with `clock: 'process'` (tests), where the node's mtime,
 * ZooKeeper's time, is not the clock the window is judged on.
 */
export function windowData(ms: number, id: string, manual = false, at?: number): Buffer {
  return Buffer.from(JSON.stringify({ ms, id, ...(manual ? { manual } : {}), ...(at === undefined ? {} : { at }) }));
}

/** The start `windowData` records for a window opened now on `store`'s session: none on ZooKeeper's clock. */
export function windowStartNow(store: ProtocolContext): number | undefined {
  return store.session.clock === 'process' ? Date.now() : undefined;
}

export function countData(count: number): Buffer {
  return Buffer.from(JSON.stringify({ count }));
}

export function newWindowId(): string {
  return randomBytes(4).toString('hex');
}

function parseJson(data: Buffer): Record<string, unknown> {
  try {
    const v = JSON.parse(data.toString()) as unknown;
    return v && typeof v === 'object' ? (v as Record<string, unknown>) : {};
  } catch {
    return {}; // unreadable: an ended window
  }
}

/** The window node's data; an unreadable one reads as ended (0 ms). */
export function parseWindowData(data: Buffer): { ms: number; id: string; manual: boolean; at?: number } {
  const w = parseJson(data);
  return {
    ms: typeof w.ms === 'number' && Number.isFinite(w.ms) ? w.ms : 0,
    id: typeof w.id === 'string' ? w.id : '',
    manual: w.manual === true,
    ...(typeof w.at === 'number' && Number.isFinite(w.at) ? { at: w.at } : {}),
  };
}

/** The window its two nodes hold. */
export function parseWindow(
  window: { data: Buffer; stat: Pick<Stat, 'mtime' | 'version'> },
  count: { data: Buffer; stat: Pick<Stat, 'version'> },
): WindowState {
  const c = parseJson(count.data);
  const { at, ...w } = parseWindowData(window.data);
  return {
    ...w,
    start: at ?? window.stat.mtime,
    version: window.stat.version,
    count: typeof c.count === 'number' ? c.count : 0,
    countVersion: count.stat.version,
  };
}

/** The window nodes in one read; undefined before the first window (or while half made). */
export async function readWindow(store: ProtocolContext): Promise<WindowState | undefined> {
  const { layout } = store;
  const [window, count] = await store.session.readMulti([
    { op: 'getData', path: layout.limiter },
    { op: 'getData', path: layout.limiterCount },
  ] as const);
  for (const r of [window, count]) if (!r.ok && !(r.error instanceof NoNodeError)) throw r.error;
  return window.ok && count.ok ? parseWindow(window, count) : undefined;
}

/** The live window and what is left of it (ms, on ZooKeeper's clock). */
export async function liveWindow(store: ProtocolContext): Promise<{ count: number; ttl: number } | undefined> {
  const w = await readWindow(store);
  if (!w || w.ms <= 0) return undefined;
  // never more than the window: the server's time is an estimate
  const ttl = Math.min(w.ms, w.start + w.ms - (await store.serverNow()));
  return ttl > 0 ? { count: w.count, ttl } : undefined;
}

/** Writes the window whatever is there (creating its nodes when missing; NoNodeError in a queue obliterated). */
async function writeWindow(store: ProtocolContext, window: Buffer, count: Buffer): Promise<void> {
  await store.executor.runPlanned(
    async () => {
      const exists = (await readWindow(store)) !== undefined;
      const ops = windowOps(store.layout, { kind: exists ? 'set' : 'open', window, count });
      return { answer: undefined, unit: { build: () => ({ ops }) } };
    },
    { onFailure: failWhenQueueGone },
  );
}

/**
 * Opens a manual window of `ms` from now in which no job starts (BullMQ's
 * Queue.rateLimit and Worker.rateLimit); a later call replaces it. `ms` of 0
 * or less ends the current window.
 */
export async function setRateLimit(store: ProtocolContext, ms: number): Promise<void> {
  validateWindowMs(ms);
  if (ms <= 0) {
    await removeRateLimit(store);
    return;
  }
  const window = windowData(Math.ceil(ms), newWindowId(), true, windowStartNow(store));
  await writeWindow(store, window, countData(MANUAL_WINDOW_COUNT));
}

/** Ends the window; resolves with 1 when a live one was ended, else 0 (DEL of BullMQ's limiter key). */
export async function removeRateLimit(store: ProtocolContext): Promise<number> {
  if (!(await liveWindow(store))) return 0;
  await writeWindow(store, windowData(0, newWindowId()), countData(0));
  return 1;
}

/**
 * BullMQ's getRateLimitTtl: with `maxJobs` (or the queue's `max` setting),
 * the ttl of the window when it holds that many jobs already, else 0; with
 * neither, the window's ttl, or -2 when there is none (Redis's PTTL).
 */
export async function getRateLimitTtl(store: ProtocolContext, maxJobs?: number): Promise<number> {
  const [window, settings] = await Promise.all([liveWindow(store), maxJobs ? undefined : readSettings(store)]);
  const max = maxJobs || intField(settings?.fields, 'max');
  if (max) return window && max <= window.count ? window.ttl : 0;
  return window ? window.ttl : -2;
}

// ---- the queue's settings, for Queue front-ends --------------------------------------------

/** Sets settings fields; resolves with how many were new (as BullMQ's HSET answers). */
function setFields(store: ProtocolContext, values: Record<string, number>): Promise<number> {
  return updateSettings(store, (f) => {
    let fresh = 0;
    for (const [k, v] of Object.entries(values)) {
      if (!Object.hasOwn(f, k)) fresh++;
      f[k] = String(v);
    }
    return fresh;
  });
}

/** Sets the global concurrency; resolves 1 when there was none (BullMQ's answer). */
export function setGlobalConcurrency(store: ProtocolContext, concurrency: number): Promise<number> {
  validateLimit(concurrency, 'concurrency');
  return setFields(store, { concurrency });
}

export async function getGlobalConcurrency(store: ProtocolContext): Promise<number | null> {
  return intField((await readSettings(store))?.fields, 'concurrency') ?? null;
}

/** Sets the global rate limit; resolves with how many of its two fields were new. */
export function setGlobalRateLimit(store: ProtocolContext, max: number, duration: number): Promise<number> {
  validateLimit(max, 'max');
  validateLimit(duration, 'duration');
  return setFields(store, { max, duration });
}

export async function getGlobalRateLimit(store: ProtocolContext): Promise<RateLimit | null> {
  const fields = (await readSettings(store))?.fields;
  const max = intField(fields, 'max');
  const duration = intField(fields, 'duration');
  return max && duration ? { max, duration } : null;
}

/** Removes settings fields (`concurrency`, or `max` and `duration`); resolves with how many existed. */
export function removeSettings(store: ProtocolContext, names: string[]): Promise<number> {
  return updateSettings(store, (f) => {
    let gone = 0;
    for (const n of names) {
      if (Object.hasOwn(f, n)) gone++;
      delete f[n];
    }
    return gone;
  });
}

/**
 * Whether the global concurrency holds new jobs back (BullMQ's isMaxed): the
 * active jobs reach it, or a slot of a larger, earlier limit is still held
 * (claims wait for it, see limited-claims.ts).
 */
export async function isMaxed(store: ProtocolContext): Promise<boolean> {
  const concurrency = await getGlobalConcurrency(store);
  if (concurrency === null) return false;
  const [claims, slots] = await Promise.all([
    store.children(store.layout.claimsDir),
    store.children(store.layout.slotsDir),
  ]);
  return claims.length >= concurrency || slots.some((s) => !(Number(s.slice(2)) < concurrency));
}
