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
 * The settings, the rate-limit window (the `limiter` node, judged on
 * ZooKeeper's clock) and the claims they govern are core's protocol (its
 * limits.ts and limited-claims.ts): zkq's own Queue and Worker share them.
 * Writing `concurrency`, `max` or `duration` refuses anything but a positive
 * integer (InvalidArgumentError), whoever writes them.
 */
import {
  getRateLimitTtl as coreGetRateLimitTtl,
  liveWindow,
  readSettings,
  removeRateLimit,
  setRateLimit as setWindow,
  updateSettings,
  validateLimit,
  validateWindowMs,
} from '@zkq/core/internal';
import type { BackendContext } from './context.js';

/** The meta field zkq keeps in its `meta` node. */
const PAUSED = 'paused';

type Fields = Record<string, string>;

/** Settings whose values the limits read: positive integers, refused otherwise at the entry. */
const LIMIT_FIELDS = ['concurrency', 'max', 'duration'];

/** Sets fields (numbers stored as strings); resolves with how many were new, as HSET does. */
export async function setQueueMeta(ctx: BackendContext, values: Record<string, string | number>): Promise<number> {
  for (const f of LIMIT_FIELDS) {
    if (f in values) validateLimit(typeof values[f] === 'string' ? Number(values[f]) : values[f], f);
  }
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

// ---- the rate-limit window (core's protocol: limits.ts) ---------------------------------

/** Opens a manual window of `ms` (BullMQ's Queue.rateLimit): no worker of the queue starts a job in it. */
export async function setRateLimit(ctx: BackendContext, ms: number): Promise<void> {
  validateWindowMs(ms);
  await setWindow(await ctx.store(), ms);
}

/** Ends the window; resolves with 1 when a live one was removed, else 0 (DEL of the limiter key). */
export async function removeRateLimitKey(ctx: BackendContext): Promise<number> {
  return removeRateLimit(await ctx.store());
}

/** BullMQ's getRateLimitTtl (see core's getRateLimitTtl). */
export async function getRateLimitTtl(ctx: BackendContext, maxJobs?: number): Promise<number> {
  return coreGetRateLimitTtl(await ctx.store(), maxJobs);
}

/** The ttl of the rate limit now, ms (0 when not limited). */
export async function rateLimitTtl(ctx: BackendContext): Promise<number> {
  return (await liveWindow(await ctx.store()))?.ttl ?? 0;
}
