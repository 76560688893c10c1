/** Small helpers shared by the benchmark sections. */
import { readFileSync } from 'node:fs';
import { fourLetterWord, redisInfo } from '@zkq/testing';

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

/** The server's counters: ZooKeeper's packets and last zxid, or Redis's commands processed. */
export type ServerCounters = Record<string, number>;

/**
 * ZooKeeper: `zxid` (one per write transaction), `packetsReceived`, `packetsSent`, and the
 * server's own request latencies, as running sums and counts of ms (`mntr`), so that the delta
 * of two samples gives the mean over what happened between them. Of an ensemble, the counters
 * of every member added up (clients are spread over them), and the highest zxid.
 */
export async function zkCounters(connectionString: string): Promise<ServerCounters> {
  const ports = connectionString.split(',').map((server) => Number(server.split(':')[1]));
  const each = await Promise.all(ports.map(serverCounters));
  const sum = (k: string) => each.reduce((a, c) => a + (c[k] ?? Number.NaN), 0);
  return {
    zxid: Math.max(...each.map((c) => c.zxid ?? Number.NaN)),
    ...Object.fromEntries(
      ['packetsReceived', 'packetsSent', 'writeMsSum', 'writes', 'readMsSum', 'reads'].map((k) => [k, sum(k)]),
    ),
  };
}

async function serverCounters(port: number): Promise<ServerCounters> {
  const mntr = await fourLetterWord(port, 'mntr');
  const srvr = await fourLetterWord(port, 'srvr');
  const zxid = /Zxid:\s*0x([0-9a-f]+)/i.exec(srvr)?.[1];
  const counter = (name: string) => Number(new RegExp(`${name}\\s+(\\d+)`).exec(mntr)?.[1] ?? Number.NaN);
  return {
    // The low 32 bits count transactions within an epoch; a server keeps its epoch while it runs.
    zxid: zxid ? Number(BigInt(`0x${zxid}`) & 0xffffffffn) : Number.NaN,
    packetsReceived: counter('zk_packets_received'),
    packetsSent: counter('zk_packets_sent'),
    writeMsSum: counter('zk_sum_updatelatency'),
    writes: counter('zk_cnt_updatelatency'),
    readMsSum: counter('zk_sum_readlatency'),
    reads: counter('zk_cnt_readlatency'),
  };
}

/** Redis: `commands` processed (INFO stats). */
export async function redisCounters(port: number): Promise<ServerCounters> {
  const stats = await redisInfo(port, 'stats');
  return { commands: Number(stats.total_commands_processed ?? Number.NaN) };
}

/** Counter deltas between two samples. */
export function counterDelta(a: ServerCounters, b: ServerCounters): ServerCounters {
  return Object.fromEntries(Object.keys(b).map((k) => [k, (b[k] ?? Number.NaN) - (a[k] ?? Number.NaN)]));
}

/** CPU time (user + system, ms) of a process and all its threads, from /proc; NaN where unavailable. */
export function cpuMsOf(pid: number | undefined): number {
  if (!pid) return Number.NaN;
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime, stime in clock ticks (100 Hz)
  } catch {
    return Number.NaN;
  }
}

/** Resident memory of a process, MiB, from /proc; NaN where unavailable. */
export function rssMbOf(pid: number | undefined): number {
  if (!pid) return Number.NaN;
  try {
    const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb ? Number(kb) / 1024 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

/** Bytes of job data in every benchmark job (JSON). */
export const DATA_BYTES = 100;

/** `fields` plus a padding string, so that the JSON of the data is DATA_BYTES long. */
export function payload<T extends Record<string, number>>(fields: T): T & { p: string } {
  const bare = JSON.stringify({ ...fields, p: '' }).length;
  return { ...fields, p: 'x'.repeat(Math.max(0, DATA_BYTES - bare)) };
}

/** Median of the finite values, NaN when there are none. */
export function median(values: readonly number[]): number {
  const v = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (v.length === 0) return Number.NaN;
  const mid = Math.floor(v.length / 2);
  return v.length % 2 ? (v[mid] as number) : ((v[mid - 1] as number) + (v[mid] as number)) / 2;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export const round2 = (n: number) => Math.round(n * 100) / 100;

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
