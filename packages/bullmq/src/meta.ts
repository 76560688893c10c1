/**
 * BullMQ's queue meta hash and its global rate-limit window.
 *
 * Meta fields: `paused` is zkq's own pause flag (the `meta` node every
 * worker watches), so `Queue.isPaused()` and zkq's Queue agree; setting the
 * field pauses the queue and removing it resumes it, as an HSET/HDEL of
 * BullMQ's meta hash does on Redis (without the paused/resumed events:
 * `Queue.pause()` sends those). Every other field (`concurrency`, `max`,
 * `duration`, `opts.maxLenEvents`, `version`, ...) is a string in the
 * `settings` node, written by compare-and-set so concurrent writers of
 * different fields lose nothing; the node is created on the first write and
 * removed when its last field is.
 *
 * The rate-limit window is the `limiter` node, {"count","ms"}: it opened
 * when the node was last written and closes `ms` later. Both ends are
 * ZooKeeper's own times: the window's start is the node's mtime, and "now"
 * is the mtime of a write to the `clock` node made after reading the window.
 * No client's clock is compared with another's, or with ZooKeeper's. The
 * price is one small write per read of a live window (none when there is no
 * window). An expired window is deleted by the reader that finds it expired.
 * `count` is the jobs taken in the window; `setRateLimit` sets it to
 * Number.MAX_SAFE_INTEGER, "limited whatever the maximum", as BullMQ does.
 */
import { BadVersionError, NodeExistsError, NoNodeError, type QueueStore } from '@zkq/core';
import type { BackendContext } from './context.js';

/** The meta field zkq keeps in its `meta` node. */
const PAUSED = 'paused';

type Fields = Record<string, string>;

// ---- settings -------------------------------------------------------------------

async function readSettings(store: QueueStore): Promise<{ fields: Fields; version: number } | undefined> {
  try {
    const { data, stat } = await store.session.getData(store.layout.settings);
    const parsed = JSON.parse(data.toString() || '{}') as unknown;
    const fields: Fields = {};
    if (parsed && typeof parsed === 'object') {
      for (const [k, v] of Object.entries(parsed)) if (typeof v === 'string') fields[k] = v;
    }
    return { fields, version: stat.version };
  } catch (err) {
    if (err instanceof NoNodeError) return undefined;
    throw err;
  }
}

/**
 * Applies `change` to the settings until a compare-and-set of the result
 * succeeds (another writer in between makes it read again). `change` edits
 * the fields and returns what the call answers.
 */
async function updateSettings<T>(store: QueueStore, change: (fields: Fields) => T): Promise<T> {
  const { session, layout } = store;
  for (;;) {
    const stored = await readSettings(store);
    const fields = { ...stored?.fields };
    const answer = change(fields);
    const data = Buffer.from(JSON.stringify(fields));
    const empty = Object.keys(fields).length === 0;
    try {
      if (!stored) {
        // a missing queue fails this create (NoNode): settings never bring a deleted queue back
        if (!empty) await session.create(layout.settings, data);
      } else if (empty) await session.delete(layout.settings, stored.version);
      else if (JSON.stringify(stored.fields) !== JSON.stringify(fields)) {
        await session.setData(layout.settings, data, stored.version);
      }
      return answer;
    } catch (err) {
      const raced = err instanceof BadVersionError || err instanceof NodeExistsError;
      if (!(raced || (stored && err instanceof NoNodeError))) throw err;
    }
  }
}

/** Sets fields (numbers stored as strings); resolves with how many were new, as HSET does. */
export async function setQueueMeta(ctx: BackendContext, values: Record<string, string | number>): Promise<number> {
  const store = await ctx.store();
  const { [PAUSED]: paused, ...rest } = values;
  let added = 0;
  if (paused !== undefined && !(await store.isPaused())) {
    await store.setPaused(true);
    added++;
  }
  if (Object.keys(rest).length === 0) return added;
  return (
    added +
    (await updateSettings(store, (fields) => {
      let fresh = 0;
      for (const [k, v] of Object.entries(rest)) {
        if (!(k in fields)) fresh++;
        fields[k] = String(v);
      }
      return fresh;
    }))
  );
}

export async function getQueueMetaField(ctx: BackendContext, field: string): Promise<string | null> {
  const [value] = await getQueueMetaFields(ctx, [field]);
  return value ?? null;
}

export async function getQueueMetaFields(ctx: BackendContext, fields: string[]): Promise<(string | null)[]> {
  const meta = await getQueueMeta(ctx);
  return fields.map((f) => (Object.hasOwn(meta, f) ? (meta[f] as string) : null));
}

/** Every field; `paused` is `'1'` while the queue is paused (BullMQ's Queue.getMeta reads it so). */
export async function getQueueMeta(ctx: BackendContext): Promise<Record<string, string>> {
  const store = await ctx.store();
  const [settings, paused] = await Promise.all([readSettings(store), store.isPaused()]);
  const meta: Fields = { ...settings?.fields };
  delete meta[PAUSED];
  if (paused) meta[PAUSED] = '1';
  return meta;
}

/** Removes fields; resolves with how many existed, as HDEL does. */
export async function removeQueueMetaFields(ctx: BackendContext, fields: string[]): Promise<number> {
  const store = await ctx.store();
  let removed = 0;
  if (fields.includes(PAUSED) && (await store.isPaused())) {
    await store.setPaused(false);
    removed++;
  }
  const others = [...new Set(fields.filter((f) => f !== PAUSED))];
  if (others.length === 0) return removed;
  return (
    removed +
    (await updateSettings(store, (stored) => {
      let gone = 0;
      for (const f of others) {
        if (Object.hasOwn(stored, f)) {
          delete stored[f];
          gone++;
        }
      }
      return gone;
    }))
  );
}

export async function hasQueueMetaField(ctx: BackendContext, field: string): Promise<boolean> {
  return (await getQueueMetaField(ctx, field)) !== null;
}

// ---- the rate-limit window ---------------------------------------------------------

interface Window {
  /** Jobs taken in the window. */
  count: number;
  /** What is left of it, ms (> 0). */
  ttl: number;
}

/** The live window, if any; an expired one is deleted on the way. */
async function readWindow(store: QueueStore): Promise<Window | undefined> {
  const { session, layout } = store;
  let read: { data: Buffer; stat: { mtime: number; version: number } };
  try {
    read = await session.getData(layout.limiter);
  } catch (err) {
    if (err instanceof NoNodeError) return undefined;
    throw err;
  }
  const { count, ms } = parseWindow(read.data);
  const ttl = read.stat.mtime + ms - (await store.serverNow());
  if (ttl > 0) return { count, ttl };
  await session.delete(layout.limiter, read.stat.version).catch((err) => {
    if (!(err instanceof NoNodeError || err instanceof BadVersionError)) throw err;
  });
  return undefined;
}

function parseWindow(data: Buffer): { count: number; ms: number } {
  try {
    const w = JSON.parse(data.toString()) as { count?: unknown; ms?: unknown };
    return {
      count: typeof w.count === 'number' ? w.count : 0,
      ms: typeof w.ms === 'number' && Number.isFinite(w.ms) ? w.ms : 0,
    };
  } catch {
    return { count: 0, ms: 0 }; // unreadable: an expired window, removed by the reader
  }
}

/**
 * Opens a window of `ms` from now in which the queue is rate limited (BullMQ's
 * Queue.rateLimit, `SET limiter MAX PX ms`); a later call replaces it. A
 * window of 0 ms or less ends the current one.
 */
export async function setRateLimit(ctx: BackendContext, ms: number): Promise<void> {
  if (typeof ms !== 'number' || Number.isNaN(ms)) throw new TypeError('expireTimeMs must be a number of milliseconds');
  const store = await ctx.store();
  const { session, layout } = store;
  if (ms <= 0) {
    await removeRateLimitKey(ctx);
    return;
  }
  const data = Buffer.from(JSON.stringify({ count: Number.MAX_SAFE_INTEGER, ms: Math.ceil(ms) }));
  for (;;) {
    try {
      await session.setData(layout.limiter, data);
      return;
    } catch (err) {
      if (!(err instanceof NoNodeError)) throw err;
    }
    try {
      await session.create(layout.limiter, data);
      return;
    } catch (err) {
      if (!(err instanceof NodeExistsError)) throw err;
    }
  }
}

/** Ends the window; resolves with 1 when a live one was removed, else 0 (DEL of the limiter key). */
export async function removeRateLimitKey(ctx: BackendContext): Promise<number> {
  const store = await ctx.store();
  if (!(await readWindow(store))) return 0;
  return store.session.delete(store.layout.limiter).then(
    () => 1,
    (err) => {
      if (err instanceof NoNodeError) return 0;
      throw err;
    },
  );
}

/**
 * BullMQ's getRateLimitTtl: with `maxJobs` (or the queue's `max` setting),
 * the ttl of the window when it holds that many jobs already, else 0; with
 * neither, the window's ttl, or -2 when there is none (Redis's PTTL).
 */
export async function getRateLimitTtl(ctx: BackendContext, maxJobs?: number): Promise<number> {
  const store = await ctx.store();
  const [window, max] = await Promise.all([
    readWindow(store),
    maxJobs ? Promise.resolve(maxJobs) : getQueueMetaField(ctx, 'max').then((m) => (m ? Number(m) : 0)),
  ]);
  if (max) return window && max <= window.count ? window.ttl : 0;
  return window ? window.ttl : -2;
}

/** The ttl of the global rate limit now, ms (0 when not limited). */
export async function rateLimitTtl(ctx: BackendContext): Promise<number> {
  return (await readWindow(await ctx.store()))?.ttl ?? 0;
}
