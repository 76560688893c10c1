/**
 * A very large backlog (`--backlog 1000000`, not part of the default run):
 * addBulk of every job, then one worker process drains them while recording
 * the order in which they start. Reported: both rates, how far out of order
 * jobs started, the largest listing any zkq session made (against one bucket),
 * and the server's footprint: ZooKeeper's live heap, resident memory, tree
 * size and snapshot size (a restart writes a snapshot of the whole tree, and
 * its duration is the recovery time of such a backlog); Redis's used memory.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fourLetterWord, redisInfo, type ZooKeeperServer } from '@zkq/testing';
import { clock, payload, rate, round2, rssMbOf } from './lib.js';
import type { RunContext } from './scenarios.js';
import { WorkerGroup } from './systems.js';

/** Jobs per addBulk call in the backlog scenario. */
const BACKLOG_CHUNK = 10_000;

export interface BacklogServer {
  /** The ZooKeeper this bench started for the backlog (restartable), if any. */
  zk?: { server: ZooKeeperServer; dataDir: string };
  /** Redis port, for BullMQ's footprint. */
  redisPort?: number;
}

/** Live heap of a JVM after a full collection (jcmd), MiB; NaN when jcmd is not available. */
function liveHeapMb(pid: number | undefined): number {
  if (!pid) return Number.NaN;
  try {
    execFileSync('jcmd', [String(pid), 'GC.run'], { stdio: 'ignore', timeout: 120_000 });
    const info = execFileSync('jcmd', [String(pid), 'GC.heap_info'], { encoding: 'utf8', timeout: 30_000 });
    const used = [...info.matchAll(/(?:generation|heap)\s+total \d+K, used (\d+)K/g)].map((m) => Number(m[1]));
    return used.length ? used.reduce((a, b) => a + b, 0) / 1024 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

function newestSnapshotMb(dataDir: string): number {
  const dir = join(dataDir, 'version-2');
  const snaps = readdirSync(dir)
    .filter((f) => f.startsWith('snapshot.'))
    .map((f) => statSync(join(dir, f)))
    .sort((a, b) => b.mtimeMs - a.mtimeMs);
  return snaps[0] ? snaps[0].size / 2 ** 20 : Number.NaN;
}

export async function benchBacklog(ctx: RunContext, jobs: number, server: BacklogServer): Promise<void> {
  const { sys } = ctx;
  const put = (key: string, value: number) => {
    ctx.metrics[`${sys.name}.backlog.${key}`] = value;
  };
  put('jobs', jobs);
  let maxListing = 0;
  const q = sys.queue('backlog');
  try {
    const session = (await q.waitUntilReady()) as { stats?: { maxChildren: number } } | undefined;
    ctx.log(`${sys.label} backlog: addBulk of ${jobs} jobs (${BACKLOG_CHUNK} per call)`);
    const t0 = clock();
    for (let i = 0; i < jobs; i += BACKLOG_CHUNK) {
      const n = Math.min(BACKLOG_CHUNK, jobs - i);
      const opts = sys.retention('remove');
      await q.addBulk(Array.from({ length: n }, (_, k) => ({ name: 'job', data: payload({ i: i + k }), opts })));
      if ((i / BACKLOG_CHUNK) % 20 === 19) ctx.log(`${sys.label} backlog: ${i + n} added`);
    }
    put('addRate', rate(jobs, clock() - t0));
    maxListing = session?.stats?.maxChildren ?? 0;
  } finally {
    await q.close();
  }

  if (sys.name === 'zkq') {
    const port = Number(server.zk?.server.connectionString.split(':')[1]);
    const mntr = port ? await fourLetterWord(port, 'mntr') : '';
    const stat = (name: string) => Number(new RegExp(`${name}\\s+(\\d+)`).exec(mntr)?.[1] ?? Number.NaN);
    put('znodes', stat('zk_znode_count'));
    put('dataMb', round2(stat('zk_approximate_data_size') / 2 ** 20));
    put('heapMb', Math.round(liveHeapMb(sys.serverPids[0])));
    put('rssMb', Math.round(rssMbOf(sys.serverPids[0])));
    if (server.zk) {
      ctx.log('zkq backlog: restarting ZooKeeper (it writes a snapshot of the whole tree)');
      const proc = server.zk.server.process;
      const r0 = clock();
      await proc.stop({ graceful: true });
      proc.start();
      await proc.waitServing(600_000);
      put('restartMs', Math.round(clock() - r0));
      put('snapshotMb', round2(newestSnapshotMb(server.zk.dataDir)));
      sys.serverPids = proc.pid === undefined ? [] : [proc.pid];
    }
  } else if (server.redisPort) {
    const mem = await redisInfo(server.redisPort, 'memory');
    put('memoryMb', Math.round(Number(mem.used_memory ?? Number.NaN) / 2 ** 20));
  }

  ctx.log(`${sys.label} backlog: draining ${jobs} jobs with one worker process`);
  const group = await WorkerGroup.start(
    sys,
    { queue: 'backlog', processes: 1, behaviour: 'order', concurrency: ctx.concurrency },
    120_000 + jobs * 20,
  );
  try {
    const t0 = group.go();
    await group.waitFinished(jobs);
    const [r] = await group.stop();
    if (r) {
      put('drainRate', rate(jobs, r.lastAt - t0));
      put('maxBehind', r.maxBehind ?? Number.NaN);
      put('startedLate', r.startedLate ?? Number.NaN);
      if (r.maxChildren !== undefined) put('maxListing', Math.max(maxListing, r.maxChildren));
    }
  } finally {
    await group.kill();
  }
}
