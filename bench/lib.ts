/** Small helpers shared by the benchmark sections. */
import { fourLetterWord } from '@zkq/testing';

/** Wall-clock time in ms with sub-ms resolution, comparable across processes on one machine. */
export function clock(): number {
  return performance.timeOrigin + performance.now();
}

/** Runs `count` tasks with at most `inFlight` of them pending at once. */
export async function pipelined(count: number, inFlight: number, task: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < count) {
      const i = next++;
      await task(i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(inFlight, count) }, lane));
}

/** Times `fn`; resolves with the elapsed ms. */
export async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t0 = clock();
  await fn();
  return clock() - t0;
}

export function rate(count: number, ms: number): number {
  return ms > 0 ? Math.round((count * 1000) / ms) : 0;
}

/** The `p`-th percentile (0..100) of `values` (nearest rank). */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = values.slice().sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] as number;
}

/** Server-side counters: the last zxid (one per write transaction) and packets received. */
export interface ServerCounters {
  zxid: number;
  packetsReceived: number;
}

export async function serverCounters(port: number): Promise<ServerCounters> {
  const mntr = await fourLetterWord(port, 'mntr');
  const srvr = await fourLetterWord(port, 'srvr');
  const zxid = /Zxid:\s*0x([0-9a-f]+)/i.exec(srvr)?.[1];
  const packets = /zk_packets_received\s+(\d+)/.exec(mntr)?.[1];
  return {
    // The low 32 bits count transactions within an epoch; a standalone server keeps one epoch.
    zxid: zxid ? Number(BigInt(`0x${zxid}`) & 0xffffffffn) : Number.NaN,
    packetsReceived: packets ? Number(packets) : Number.NaN,
  };
}

/** Counter deltas between two samples. */
export function counterDelta(a: ServerCounters, b: ServerCounters): ServerCounters {
  // The four-letter-word connections themselves are counted as packets: 2 per sample pair.
  return { zxid: b.zxid - a.zxid, packetsReceived: b.packetsReceived - a.packetsReceived };
}

/** A plain text table: the first row is the header. */
export function table(rows: string[][]): string {
  const widths = rows[0]?.map((_, c) => Math.max(...rows.map((r) => (r[c] ?? '').length))) ?? [];
  const line = (r: string[]) =>
    r
      .map((cell, c) => (c === 0 ? cell.padEnd(widths[c] ?? 0) : cell.padStart(widths[c] ?? 0)))
      .join('  ')
      .trimEnd();
  const rule = widths.map((w) => '-'.repeat(w)).join('  ');
  return [line(rows[0] ?? []), rule, ...rows.slice(1).map(line)].join('\n');
}

/** 12345.6 → "12,346". */
export function fmt(n: number | undefined, digits = 0): string {
  if (n === undefined || Number.isNaN(n)) return '-';
  return n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
}
