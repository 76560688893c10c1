/**
 * The per-minute series (queue.getMetrics) without ZooKeeper: BullMQ's own
 * fixtures, and the same series whatever the batching and the order in which
 * workers write their counts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  CHUNK_MINUTES,
  decodeChunk,
  hourOf,
  type MinutePoint,
  mergePoints,
  notePoint,
  pointMinutes,
  type SeriesHead,
  seriesLength,
  trimBeforeHour,
  validateMetricsOptions,
} from '@zkq/core/internal';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const START = Date.UTC(2017, 1, 7, 9, 24);

/** BullMQ's collectMetrics, one job at a time (the reference). */
function bullmqSeries(finishes: number[], max: number) {
  let count = 0;
  let prevTS: number | undefined;
  let prevCount = 0;
  let data: number[] = [];
  for (const ts of finishes) {
    const before = count++;
    if (prevTS === undefined) {
      prevTS = ts;
      prevCount = 0;
      continue;
    }
    const n = Math.min(Math.floor(ts / MINUTE) - Math.floor(prevTS / MINUTE), max);
    if (n > 0) {
      const points = [before - prevCount, ...new Array<number>(n - 1).fill(0)];
      for (const p of points) data.unshift(p);
      data = data.slice(0, max);
      prevCount = before;
      prevTS = ts;
    }
  }
  return { meta: { count, prevTS: prevTS ?? 0, prevCount }, data };
}

/** The stored series (head and hour chunks) kept in memory, written as metrics.ts writes it. */
class MemorySeries {
  head: SeriesHead | undefined;
  readonly chunks = new Map<number, number[]>();

  constructor(private readonly max: number) {}

  write(points: Iterable<MinutePoint>): void {
    const { head, adds } = mergePoints(this.head, points, this.max);
    for (const [hour, add] of adds) {
      const counts = this.chunks.get(hour) ?? decodeChunk(undefined);
      for (const [i, n] of add) counts[i] = (counts[i] ?? 0) + n;
      this.chunks.set(hour, counts);
    }
    for (const hour of this.chunks.keys()) if (hour < trimBeforeHour(head)) this.chunks.delete(hour);
    this.head = head;
  }

  read(start = 0, end = -1) {
    const h = this.head as SeriesHead;
    const data = pointMinutes(h, start, end).map(
      (m) => this.chunks.get(hourOf(m))?.[m - hourOf(m) * CHUNK_MINUTES] ?? 0,
    );
    return { meta: { count: h.count, prevTS: h.prevTS, prevCount: h.prevCount }, data, count: seriesLength(h) };
  }
}

/** Finish times of jobs that each take `timings[i]` ms, one after the other (BullMQ's test harness). */
function finishTimes(timings: number[]): number[] {
  let t = START;
  return timings.map((d) => {
    t += d;
    return t;
  });
}

function batchOf(times: number[]): MinutePoint[] {
  const batch = new Map<number, MinutePoint>();
  for (const ts of times) notePoint(batch, ts);
  return [...batch.values()];
}

test("BullMQ's fixture: completed jobs over two hours", () => {
  const timings = [
    0,
    0,
    MINUTE / 2,
    MINUTE / 2,
    0,
    0,
    MINUTE,
    MINUTE,
    MINUTE * 3,
    SECOND * 70,
    SECOND * 50,
    HOUR,
    MINUTE,
  ];
  const fixture = [
    1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 1, 1, 3, 3,
  ];
  const series = new MemorySeries(120);
  for (const ts of finishTimes(timings)) series.write(batchOf([ts]));
  const m = series.read();
  assert.equal(m.meta.count, timings.length);
  assert.deepEqual(m.data, fixture);
  assert.equal(m.count, m.data.length);
  assert.equal(m.count, Math.floor(timings.reduce((a, b) => a + b, 0) / MINUTE));
});

test("BullMQ's fixture: only maxDataPoints points are kept", () => {
  const timings = [0, 0, MINUTE / 2, MINUTE / 2, 0, 0, MINUTE, MINUTE, MINUTE * 3, HOUR, 0, 0, MINUTE, MINUTE];
  const series = new MemorySeries(15);
  for (const ts of finishTimes(timings)) series.write(batchOf([ts]));
  const m = series.read();
  assert.equal(m.meta.count, timings.length);
  assert.deepEqual(m.data, [1, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
  assert.equal(m.count, 15);
  assert.ok(series.chunks.size <= 15 / CHUNK_MINUTES + 2, 'old hours are trimmed');
});

test("BullMQ's fixture: failed jobs", () => {
  const timings = [0, MINUTE, MINUTE / 5, MINUTE / 2, 0, MINUTE, MINUTE * 3, 0];
  const series = new MemorySeries(120);
  for (const ts of finishTimes(timings)) series.write(batchOf([ts]));
  assert.deepEqual(series.read().data, [0, 0, 1, 4, 1]);
});

test('pages of the series put together are the whole series (LRANGE indices)', () => {
  const timings = [0, 0, MINUTE / 2, MINUTE / 2, 0, 0, MINUTE, MINUTE, MINUTE * 3, HOUR, MINUTE];
  const series = new MemorySeries(120);
  series.write(batchOf(finishTimes(timings)));
  const all = series.read();
  const pages: number[] = [];
  for (let skip = 0; skip < all.count; skip += 10) pages.push(...series.read(skip, skip + 9).data);
  assert.deepEqual(pages, all.data);
  assert.deepEqual(series.read(-3, -1).data, all.data.slice(-3));
  assert.deepEqual(series.read(5, 2).data, []);
  assert.deepEqual(series.read(all.count + 5, -1).data, []);
});

/** A deterministic pseudo-random sequence (the test must not be flaky). */
function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

test('batched and out-of-order writes by several workers give the one-job-at-a-time series', () => {
  for (let seed = 1; seed <= 20; seed++) {
    const rand = lcg(seed);
    const max = 30 + Math.floor(rand() * 200);
    const timings = Array.from({ length: 400 }, () => {
      const r = rand();
      return r < 0.6 ? Math.floor(rand() * 5 * SECOND) : r < 0.95 ? Math.floor(rand() * 3 * MINUTE) : 20 * MINUTE;
    });
    const times = finishTimes(timings);
    const expected = bullmqSeries(times, max);
    // three workers share the jobs; each writes its counts every few jobs, the writes interleave in any order
    const perWorker: number[][] = [[], [], []];
    for (const ts of times) perWorker[Math.floor(rand() * 3)]?.push(ts);
    const batches: number[][] = [];
    for (const mine of perWorker) {
      for (let i = 0; i < mine.length; ) {
        const n = 1 + Math.floor(rand() * 12);
        batches.push(mine.slice(i, i + n));
        i += n;
      }
    }
    // each worker writes its own batches in order, but the workers' writes interleave
    batches.sort((a, b) => (a[0] as number) - (b[0] as number) + (rand() - 0.5) * 4 * MINUTE);
    const series = new MemorySeries(max);
    for (const b of batches) series.write(batchOf(b));
    const got = series.read();
    assert.equal(got.meta.count, expected.meta.count, `seed ${seed}: count`);
    assert.equal(got.meta.prevCount, expected.meta.prevCount, `seed ${seed}: prevCount`);
    assert.equal(got.meta.prevTS, expected.meta.prevTS, `seed ${seed}: prevTS`);
    assert.deepEqual(got.data, expected.data, `seed ${seed}: data`);
    assert.ok(series.chunks.size <= Math.ceil(max / CHUNK_MINUTES) + 2, `seed ${seed}: chunks bounded`);
  }
});

test('metrics options are validated', () => {
  validateMetricsOptions({});
  validateMetricsOptions({ maxDataPoints: 60 });
  for (const bad of [null, 5, { maxDataPoints: 0 }, { maxDataPoints: 1.5 }, { maxDataPoints: 10_000_000 }]) {
    assert.throws(() => validateMetricsOptions(bad), { code: 'ZKQ_INVALID_ARGUMENT' });
  }
});
