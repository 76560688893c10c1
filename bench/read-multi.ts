/**
 * Micro-measure: reading 100 nodes as 100 pipelined getData versus one
 * readMulti of 100, on one session. Prints reads/s, requests/s and the CPU
 * per read of this process (the client) and of the server when its pid is
 * known. A measure to read, not a test: nothing is asserted.
 *
 *   npx tsx --conditions=zkq-source bench/read-multi.ts [--zk host:port] [--zk-pid N] [--rounds 300] [--bytes 1024]
 */
import { parseArgs } from 'node:util';
import { type ReadOp, Session } from '@zkq/core';
import { startZooKeeper } from '@zkq/testing';
import { cpuMsOf, fmt, table, timed } from './lib.js';

const { values: flags } = parseArgs({
  options: {
    zk: { type: 'string' },
    'zk-pid': { type: 'string' },
    rounds: { type: 'string', default: '300' },
    bytes: { type: 'string', default: '1024' },
  },
});
const rounds = Number(flags.rounds);
const bytes = Number(flags.bytes);
const BATCH = 100;

const server = flags.zk ? undefined : await startZooKeeper({ fsync: true });
const zkPid = server?.process.pid ?? (flags['zk-pid'] ? Number(flags['zk-pid']) : undefined);
const session = await Session.connect({
  connectionString: flags.zk ?? (server?.connectionString as string),
  namespace: `/bench-read-multi-${Date.now().toString(36)}`,
});

const paths = Array.from({ length: BATCH }, (_, i) => `/r-${String(i).padStart(3, '0')}`);
await session.multi(paths.map((path) => ({ op: 'create' as const, path, data: Buffer.alloc(bytes, 1) })));
const reads: ReadOp[] = paths.map((path) => ({ op: 'getData', path }));

const single = () => Promise.all(paths.map((p) => session.getData(p)));
const multi = () => session.readMulti(reads);

async function measure(name: string, round: () => Promise<unknown>, requestsPerRound: number) {
  for (let i = 0; i < 50; i++) await round(); // warm the JIT on both sides
  const cpu0 = process.cpuUsage();
  const server0 = cpuMsOf(zkPid);
  const ms = await timed(async () => {
    for (let i = 0; i < rounds; i++) await round();
  });
  const cpu = process.cpuUsage(cpu0);
  const serverMs = cpuMsOf(zkPid) - server0;
  const total = rounds * BATCH;
  return [
    name,
    fmt((total * 1000) / ms),
    fmt((rounds * requestsPerRound * 1000) / ms),
    fmt(ms / rounds, 2),
    fmt((cpu.user + cpu.system) / total, 1),
    fmt((serverMs * 1000) / total, 1),
  ];
}

try {
  const rows = [
    ['100 reads of ' + bytes + ' B', 'reads/s', 'requests/s', 'ms/batch', 'client µs/read', 'server µs/read'],
  ];
  rows.push(await measure('100 getData, pipelined', single, BATCH));
  rows.push(await measure('1 readMulti of 100', multi, 1));
  rows.push(await measure('100 getData, pipelined (again)', single, BATCH));
  rows.push(await measure('1 readMulti of 100 (again)', multi, 1));
  console.log(table(rows));
  console.log(`${rounds} rounds each; server CPU from /proc (10 ms ticks), '-' when its pid is unknown`);
} finally {
  await session.deleteRecursive('/');
  await session.close();
  await server?.stop();
}
