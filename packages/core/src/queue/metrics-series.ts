/**
 * The per-minute series of finished jobs (BullMQ's metrics), as pure
 * functions: what a batch of counts does to a series, and which minutes a
 * read returns. metrics.ts stores and reads it.
 *
 * BullMQ's meaning is kept: `count` is every job ever counted, `prevTS` the
 * time of the first job of the latest minute that has jobs, `prevCount` the
 * count before that minute, and `data[i]` the jobs of the minute `i + 1`
 * minutes before it (newest first), at most `maxDataPoints` of them, as many
 * as minutes have passed since the first job. Counts arrive in batches from
 * several workers, not one job at a time, so a batch may hold a minute older
 * than the latest: it is added to its own minute (while still in the window),
 * which gives the same series as BullMQ's job-by-job collection.
 */
import { InvalidArgumentError } from '../errors.js';

export type MetricsKind = 'completed' | 'failed';

/** BullMQ's Metrics: the series as `queue.getMetrics` returns it. */
export interface Metrics {
  meta: { count: number; prevTS: number; prevCount: number };
  /** Jobs per minute, newest first, from the minute before `prevTS`'s. */
  data: number[];
  /** How many points the series holds (data's length for the whole range). */
  count: number;
}

/** BullMQ's MetricsOptions (the Worker's `metrics` option). */
export interface MetricsOptions {
  /** Points (minutes) kept. Default MetricsTime.ONE_WEEK. */
  maxDataPoints?: number;
}

/** BullMQ's MetricsTime: handy values of maxDataPoints. */
export const MetricsTime = {
  ONE_MINUTE: 1,
  FIVE_MINUTES: 5,
  FIFTEEN_MINUTES: 15,
  THIRTY_MINUTES: 30,
  ONE_HOUR: 60,
  ONE_WEEK: 10080,
  TWO_WEEKS: 20160,
  ONE_MONTH: 80640,
} as const;

export const DEFAULT_METRICS_DATA_POINTS = MetricsTime.ONE_WEEK;
/** Most points a series keeps (a year of minutes): reads and trims stay bounded. */
export const MAX_METRICS_DATA_POINTS = 525_600;

const MINUTE_MS = 60_000;
/** Minutes per stored chunk. */
export const CHUNK_MINUTES = 60;

/** The series head, stored as the series node's data. */
export interface SeriesHead {
  count: number;
  prevTS: number;
  prevCount: number;
  /** Minute of the first job counted (data's length is measured from it). */
  first: number;
  /** maxDataPoints of the last writer. */
  max: number;
  /** Oldest hour with a chunk, when any: tells a writer whether there is anything to trim. */
  oldest?: number;
}

/** Jobs finished in one minute, with the time of the first of them. */
export interface MinutePoint {
  minute: number;
  n: number;
  ts: number;
}

export function minuteOf(ts: number): number {
  return Math.floor(ts / MINUTE_MS);
}

export function hourOf(minute: number): number {
  return Math.floor(minute / CHUNK_MINUTES);
}

/** Throws InvalidArgumentError unless `o` is a usable MetricsOptions. */
export function validateMetricsOptions(o: unknown, name = 'metrics'): asserts o is MetricsOptions {
  if (typeof o !== 'object' || o === null) throw new InvalidArgumentError(`${name} must be { maxDataPoints }`, name);
  const max = (o as MetricsOptions).maxDataPoints;
  if (max !== undefined && (!Number.isInteger(max) || max < 1 || max > MAX_METRICS_DATA_POINTS)) {
    throw new InvalidArgumentError(
      `${name}.maxDataPoints must be an integer from 1 to ${MAX_METRICS_DATA_POINTS}`,
      `${name}.maxDataPoints`,
    );
  }
}

/** Adds one job finished at `ts` to a batch being collected. */
export function notePoint(batch: Map<number, MinutePoint>, ts: number, n = 1): void {
  const minute = minuteOf(ts);
  const p = batch.get(minute);
  if (p) {
    p.n += n;
    p.ts = Math.min(p.ts, ts);
  } else batch.set(minute, { minute, n, ts });
}

/** What a batch does to a series: the new head, and the counts to add per hour chunk (minute-of-hour -> n). */
export interface SeriesChange {
  head: SeriesHead;
  adds: Map<number, Map<number, number>>;
}

/**
 * Applies `points` (any order) to `head` (undefined: a new series). Points
 * older than the window are counted in `count` but kept in no chunk.
 */
export function mergePoints(head: SeriesHead | undefined, points: Iterable<MinutePoint>, max: number): SeriesChange {
  const sorted = [...points].filter((p) => p.n > 0).sort((a, b) => a.minute - b.minute);
  let h: SeriesHead | undefined = head ? { ...head, max } : undefined;
  const perMinute = new Map<number, number>();
  for (const p of sorted) {
    if (!h) h = { count: 0, prevTS: p.ts, prevCount: 0, first: p.minute, max };
    const latest = minuteOf(h.prevTS);
    if (p.minute > latest) {
      h.prevCount = h.count;
      h.prevTS = p.ts;
    } else if (p.minute < latest) {
      h.prevCount += p.n;
    } else if (p.ts < h.prevTS) {
      h.prevTS = p.ts; // an earlier job of the latest minute, from another worker
    }
    h.count += p.n;
    h.first = Math.min(h.first, p.minute);
    perMinute.set(p.minute, (perMinute.get(p.minute) ?? 0) + p.n);
  }
  if (!h) throw new InvalidArgumentError('no points to merge', 'points');
  const start = windowStart(h);
  const adds = new Map<number, Map<number, number>>();
  for (const [minute, n] of perMinute) {
    if (minute < start) continue;
    const hour = hourOf(minute);
    const chunk = adds.get(hour) ?? new Map<number, number>();
    adds.set(hour, chunk);
    chunk.set(minute - hour * CHUNK_MINUTES, n);
  }
  return { head: h, adds };
}

/** The oldest minute a series keeps: `max` minutes before its latest. */
export function windowStart(head: SeriesHead): number {
  return minuteOf(head.prevTS) - head.max;
}

/** Chunks of hours before this one hold nothing in the window. */
export function trimBeforeHour(head: SeriesHead): number {
  return hourOf(windowStart(head));
}

/** How many points the series holds. */
export function seriesLength(head: SeriesHead): number {
  return Math.max(0, Math.min(minuteOf(head.prevTS) - head.first, head.max));
}

/**
 * The minutes of points `start`..`end` (Redis LRANGE indices: negative ones
 * count from the end), newest first; empty when the range is.
 */
export function pointMinutes(head: SeriesHead, start: number, end: number): number[] {
  const length = seriesLength(head);
  const from = start < 0 ? Math.max(0, length + start) : start;
  const to = Math.min(length - 1, end < 0 ? length + end : end);
  const latest = minuteOf(head.prevTS);
  const minutes: number[] = [];
  for (let i = from; i <= to; i++) minutes.push(latest - 1 - i);
  return minutes;
}

/** A chunk's stored form, read back; anything malformed reads as an empty hour. */
export function decodeChunk(data: Buffer | undefined): number[] {
  const empty = () => new Array<number>(CHUNK_MINUTES).fill(0);
  if (!data || data.length === 0) return empty();
  try {
    const parsed = JSON.parse(data.toString()) as unknown;
    if (!Array.isArray(parsed)) return empty();
    return Array.from({ length: CHUNK_MINUTES }, (_, i) => (Number.isFinite(parsed[i]) ? Number(parsed[i]) : 0));
  } catch {
    return empty();
  }
}

/** Parses a stored head; undefined for anything that is not one. */
export function decodeHead(data: Buffer): SeriesHead | undefined {
  try {
    const h = JSON.parse(data.toString()) as Partial<SeriesHead>;
    const nums = [h.count, h.prevTS, h.prevCount, h.first, h.max];
    if (nums.every((v) => typeof v === 'number' && Number.isFinite(v))) return h as SeriesHead;
  } catch {
    // fall through: an unreadable head starts a new series
  }
  return undefined;
}
