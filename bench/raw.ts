/**
 * Raw ZooKeeper limits, measured through zkq's own Session (one session,
 * requests pipelined), so that zkq's figures can be read against the ceiling
 * of the same client path on the same server in the same run.
 */
import { type Op, Session } from '@zkq/core';
import { clock, percentile, pipelined, rate, timed } from './lib.js';

export interface RawOptions {
  /** Nodes per measurement. */
  nodes: number;
  /** Single requests in flight. */
  inFlight: number;
  /** Ops per multi. */
  multiSize: number;
  /** CPU time of the server process so far, ms (NaN when unknown). */
  serverCpuMs?: () => number;
}

export interface RawResults {
  createsPerSec: number;
  deletesPerSec: number;
  multiCreateNodesPerSec1: number;
  multiCreateNodesPerSec8: number;
  multiDeleteNodesPerSec1: number;
  multiDeleteNodesPerSec8: number;
  /** One create at a time: round trip of one fsynced write, ms. */
  createLatencyP50: number;
  createLatencyP99: number;
  /** Server CPU per node, µs: pipelined single creates, and multi(100) creates with 8 in flight. */
  serverCpuUsPerCreate: number;
  serverCpuUsPerMultiCreate: number;
}

const name = (i: number) => `n-${String(i).padStart(8, '0')}`;

type Cpu = () => number;

async function singles(session: Session, dir: string, count: number, inFlight: number, cpu: Cpu) {
  await session.ensurePath(dir);
  const cpu0 = cpu();
  const create = await timed(() => pipelined(count, inFlight, (i) => session.create(`${dir}/${name(i)}`)));
  const createCpu = cpu() - cpu0;
  const del = await timed(() => pipelined(count, inFlight, (i) => session.delete(`${dir}/${name(i)}`)));
  await session.delete(dir);
  return { create: rate(count, create), del: rate(count, del), createCpuUs: (createCpu * 1000) / count };
}

async function multis(session: Session, dir: string, count: number, size: number, inFlight: number, cpu: Cpu) {
  await session.ensurePath(dir);
  const txs = Math.ceil(count / size);
  const ops = (t: number, op: 'create' | 'delete'): Op[] =>
    Array.from({ length: Math.min(size, count - t * size) }, (_, k) => ({ op, path: `${dir}/${name(t * size + k)}` }));
  const cpu0 = cpu();
  const create = await timed(() => pipelined(txs, inFlight, (t) => session.multi(ops(t, 'create'))));
  const createCpu = cpu() - cpu0;
  const del = await timed(() => pipelined(txs, inFlight, (t) => session.multi(ops(t, 'delete'))));
  await session.delete(dir);
  return { create: rate(count, create), del: rate(count, del), createCpuUs: (createCpu * 1000) / count };
}

async function latency(session: Session, dir: string, count: number) {
  await session.ensurePath(dir);
  const samples: number[] = [];
  for (let i = 0; i < count; i++) {
    const t = clock();
    await session.create(`${dir}/${name(i)}`);
    samples.push(clock() - t);
  }
  await session.deleteRecursive(dir);
  return { p50: percentile(samples, 50), p99: percentile(samples, 99) };
}

const round2 = (n: number) => Math.round(n * 100) / 100;

export async function measureRaw(connectionString: string, o: RawOptions): Promise<RawResults> {
  const session = await Session.connect({ connectionString, namespace: '/bench-raw', requestTimeout: 60_000 });
  const cpu = o.serverCpuMs ?? (() => Number.NaN);
  try {
    // Warm-up: the first pass on a fresh JVM runs at about half speed.
    const warm = Math.max(2000, Math.floor(o.nodes / 4));
    await singles(session, '/warm-s', warm, o.inFlight, cpu);
    await multis(session, '/warm-m', warm, o.multiSize, 8, cpu);

    const s = await singles(session, '/singles', o.nodes, o.inFlight, cpu);
    const m1 = await multis(session, '/multi-1', o.nodes, o.multiSize, 1, cpu);
    const m8 = await multis(session, '/multi-8', o.nodes, o.multiSize, 8, cpu);
    const lat = await latency(session, '/latency', 500);
    return {
      createsPerSec: s.create,
      deletesPerSec: s.del,
      multiCreateNodesPerSec1: m1.create,
      multiCreateNodesPerSec8: m8.create,
      multiDeleteNodesPerSec1: m1.del,
      multiDeleteNodesPerSec8: m8.del,
      createLatencyP50: round2(lat.p50),
      createLatencyP99: round2(lat.p99),
      serverCpuUsPerCreate: round2(s.createCpuUs),
      serverCpuUsPerMultiCreate: round2(m8.createCpuUs),
    };
  } finally {
    await session.deleteRecursive('/').catch(() => undefined);
    await session.close();
  }
}
