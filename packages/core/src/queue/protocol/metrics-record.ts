/**
 * Metrics write: adds a worker's per-minute counts to the queue's series
 * (metrics-series.ts; the layout is in ../metrics.ts) in ONE transaction
 * through the executor: the head at the version read (a concurrent writer
 * makes it fail, and the batch is planned again on a fresh read, by the
 * executor's retry policy), the chunks
 * it adds to, and the chunks that fell out of the window (at most
 * TRIM_BATCH). An unknown outcome is settled by the executor's receipt, so a
 * batch is never counted twice. A queue that was deleted is not created
 * again by a late write: the `metrics` directory is created only inside an
 * existing queue.
 */
import { NoNodeError } from '../../zk/errors.js';
import {
  decodeChunk,
  decodeHead,
  type MetricsKind,
  type MinutePoint,
  mergePoints,
  type SeriesHead,
  trimBeforeHour,
} from '../metrics-series.js';
import type { ProtocolContext } from './context.js';
import type { ProtocolOp } from './executor.js';

/** Chunks deleted by one write at most (the rest by the next ones). */
export const TRIM_BATCH = 200;
/** Chunks read per request. */
const READ_BATCH = 500;
/**
 * Adds `points` to the queue's series of `kind`, trimmed to `maxDataPoints`.
 * Rejects when the batch could not be written (nothing of it was).
 */
export async function recordMetrics(
  store: ProtocolContext,
  kind: MetricsKind,
  points: readonly MinutePoint[],
  maxDataPoints: number,
): Promise<void> {
  if (points.length === 0) return;
  await store.executor.runPlanned(
    async () => {
      const built = await buildWrite(store, kind, points, maxDataPoints);
      return { answer: undefined, unit: { build: () => built } };
    },
    {
      // the series changed since it was read, or its directory appeared: read again;
      // a queue deleted meanwhile is not made again
      onFailure: (err) => (err instanceof NoNodeError ? 'fail' : undefined),
    },
  );
}

async function buildWrite(
  store: ProtocolContext,
  kind: MetricsKind,
  points: readonly MinutePoint[],
  max: number,
): Promise<{ ops: ProtocolOp[] }> {
  const { session, layout } = store;
  const path = layout.metricsSeries(kind);
  const stored = await readHead(store, kind);
  const change = mergePoints(stored?.head, points, max);
  const head = change.head;
  const ops: ProtocolOp[] = [];
  if (stored) ops.push({ op: 'setData', path, data: Buffer.alloc(0), version: stored.version });
  else {
    // Inside the queue only: a deleted queue fails this create (NoNode) rather than coming back.
    if (!(await session.exists(layout.metricsDir))) ops.push({ op: 'create', path: layout.metricsDir });
    ops.push({ op: 'create', path, data: Buffer.alloc(0) });
  }
  const headIndex = ops.length - 1;
  const hours = [...change.adds.keys()];
  const chunks = await readChunks(store, kind, hours);
  let oldest = head.oldest;
  for (const hour of hours) {
    const chunk = chunks.get(hour);
    const counts = decodeChunk(chunk?.data);
    for (const [i, n] of change.adds.get(hour) ?? []) counts[i] = (counts[i] ?? 0) + n;
    const data = Buffer.from(JSON.stringify(counts));
    const chunkPath = layout.metricsChunk(kind, hour);
    if (chunk) ops.push({ op: 'setData', path: chunkPath, data, version: chunk.version });
    else ops.push({ op: 'create', path: chunkPath, data });
    oldest = Math.min(oldest ?? hour, hour);
  }
  if (stored && oldest !== undefined && oldest < trimBeforeHour(head)) {
    const trim = await trimOps(store, kind, head, hours);
    ops.push(...trim.ops);
    oldest = trim.oldest;
  }
  head.oldest = oldest;
  (ops[headIndex] as { data: Buffer }).data = Buffer.from(JSON.stringify(head));
  return { ops };
}

/** Deletes of the chunks before the window (TRIM_BATCH at most), and the oldest hour left. */
async function trimOps(
  store: ProtocolContext,
  kind: MetricsKind,
  head: SeriesHead,
  written: number[],
): Promise<{ ops: ProtocolOp[]; oldest: number | undefined }> {
  const names = await store.children(store.layout.metricsSeries(kind));
  const stored = names.filter((n) => /^h-\d{10}$/.test(n)).map((n) => Number(n.slice(2)));
  const cutoff = trimBeforeHour(head);
  const gone = new Set(
    stored
      .filter((h) => h < cutoff)
      .sort((a, b) => a - b)
      .slice(0, TRIM_BATCH),
  );
  const left = [...stored.filter((h) => !gone.has(h)), ...written];
  return {
    ops: [...gone].map((h) => ({ op: 'delete', path: store.layout.metricsChunk(kind, h) }) as ProtocolOp),
    oldest: left.length > 0 ? Math.min(...left) : undefined,
  };
}

export async function readHead(
  store: ProtocolContext,
  kind: MetricsKind,
): Promise<{ head?: SeriesHead; version: number } | undefined> {
  try {
    const { data, stat } = await store.session.getData(store.layout.metricsSeries(kind));
    const head = decodeHead(data);
    return head ? { head, version: stat.version } : { version: stat.version };
  } catch (err) {
    if (err instanceof NoNodeError) return undefined;
    throw err;
  }
}

/** The chunks of `hours` that exist, with their data and version. */
export async function readChunks(
  store: ProtocolContext,
  kind: MetricsKind,
  hours: readonly number[],
): Promise<Map<number, { data: Buffer; version: number }>> {
  const found = new Map<number, { data: Buffer; version: number }>();
  for (let i = 0; i < hours.length; i += READ_BATCH) {
    const batch = hours.slice(i, i + READ_BATCH);
    const results = await store.session.readMulti(
      batch.map((h) => ({ op: 'getData' as const, path: store.layout.metricsChunk(kind, h) })),
    );
    results.forEach((r, j) => {
      if (r.ok) found.set(batch[j] as number, { data: r.data, version: r.stat.version });
      else if (!(r.error instanceof NoNodeError)) throw r.error;
    });
  }
  return found;
}
