/**
 * Queue metrics stored in ZooKeeper: BullMQ's per-minute series of completed
 * and failed jobs (`queue.getMetrics`), written by workers with the `metrics`
 * option.
 *
 * Layout (layout.ts): `metrics/<kind>` holds the series head, and one child
 * `h-<hour>` per hour with jobs holds that hour's 60 counts. So a write is a
 * few hundred bytes whatever `maxDataPoints` is, and a series keeps at most
 * maxDataPoints / 60 + 2 chunks: a writer deletes the chunks that fell out of
 * the window (at most TRIM_BATCH per write).
 *
 * Writes: a worker collects counts per minute and writes them at most once
 * per few seconds (no write per job), in one transaction written at the
 * versions read (protocol/metrics-record.ts).
 */
import {
  CHUNK_MINUTES,
  decodeChunk,
  hourOf,
  type Metrics,
  type MetricsKind,
  pointMinutes,
  seriesLength,
} from './metrics-series.js';
import { readChunks, readHead } from './protocol/metrics-record.js';
import type { QueueStore } from './store.js';

export { recordMetrics, TRIM_BATCH } from './protocol/metrics-record.js';

/**
 * BullMQ's getMetrics: the series of `kind`, points `start`..`end` (0 is the
 * newest; -1 the oldest).
 */
export async function getMetrics(store: QueueStore, kind: MetricsKind, start = 0, end = -1): Promise<Metrics> {
  const stored = await readHead(store, kind);
  const head = stored?.head;
  if (!head) return { meta: { count: 0, prevTS: 0, prevCount: 0 }, data: [], count: 0 };
  const minutes = pointMinutes(head, start, end);
  const chunks = await readChunks(store, kind, [...new Set(minutes.map(hourOf))]);
  const counts = new Map<number, number[]>();
  for (const [hour, chunk] of chunks) counts.set(hour, decodeChunk(chunk.data));
  const data = minutes.map((m) => {
    const hour = hourOf(m);
    return counts.get(hour)?.[m - hour * CHUNK_MINUTES] ?? 0;
  });
  return {
    meta: { count: head.count, prevTS: head.prevTS, prevCount: head.prevCount },
    data,
    count: seriesLength(head),
  };
}
