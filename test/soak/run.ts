/**
 * The fault soak: starts its own ZooKeeper (it restarts it, so never a
 * shared one), then
 *   1. FIFO phase: one worker process at concurrency 1, no faults, on queue
 *      `fifo`; jobs of two priorities, enqueued one call after another;
 *   2. chaos phase: 4 worker processes (concurrency 5/25/70/100 on queue
 *      `chaos`, 10 each on `chaos2`), each behind its own TcpProxy; the
 *      producer (behind a proxy too) enqueues jobs, and flows through
 *      BullMQ's FlowProducer (parents in `chaos`, children in both), and
 *      the extras (extras.ts: sizes, logs, deduplication, schedulers) on
 *      the rate-limited queue `extra` (concurrency 3 in each process),
 *      while faults (faults.ts) hit the workers, the producer's connection
 *      and the server;
 *   3. drain: waits (with a deadline) until nothing is waiting, delayed or
 *      active in either queue, kills every worker, reads every job's final
 *      state through the public API, reads the workers' logs, and checks
 *      the history.
 * Everything it started is stopped in a `finally`; worker processes also
 * die with this process (workers.ts).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue } from '@zkq/producer';
import { startZooKeeper, TcpProxy, type ZooKeeperServer } from '@zkq/testing';
import { type CheckReport, checkHistory } from './checker.js';
import { describeElections, electionTimeline, readElections } from './elections.js';
import { EXTRA_QUEUE } from './extra-attempt.js';
import { ExtrasFeeder, emptyExtras } from './extras.js';
import { runFaults, type Slot } from './faults.js';
import { readFinals } from './final-state.js';
import { FlowFeeder } from './flows.js';
import { NdjsonLog, readWorkerLogs, type SoakHistory } from './history.js';
import { Producer } from './producer.js';
import { formatReport } from './report.js';
import { Rng } from './rng.js';
import { WorkerProcess } from './workers.js';

export interface SoakOptions {
  /** Length of the chaos phase (load and faults), s. */
  seconds: number;
  /** Longest wait for the queues to drain afterwards, s. */
  drainSeconds: number;
  seed: number;
  jobsPerSecond: number;
  /** Flows added per second, on average (besides the jobs). */
  flowsPerSecond: number;
  fifoJobs: number;
  /** Also kill the housekeeping leader around ZooKeeper restarts, repeatedly (faults.ts). */
  leaderRestarts?: boolean;
  /** Keep the logs also when there is no violation. */
  keepLogs?: boolean;
  print(line: string): void;
}

export interface SoakOutcome {
  report: CheckReport;
  /** The printed report. */
  text: string;
  /** Logs of the run (kept when there are violations). */
  dir: string;
}

const PREFIX = 'soak';
const CHAOS_QUEUE = 'chaos';
/** The second queue of the flows' children. */
const FLOW_QUEUE = 'chaos2';
const FLOW_QUEUE_CONCURRENCY = 10;
const FIFO_QUEUE = 'fifo';
const EXTRA_QUEUE_CONCURRENCY = 3;
/** Extras jobs added per second, on average (extras.ts). */
const EXTRAS_PER_SECOND = 2;
const WORKER_SESSION_MS = 8000;
// Two slots run their jobs on threads: one job per thread (an abort ends its thread), and 13 sharing each of two threads
const SLOTS = [
  { concurrency: 5, lockDuration: 2000, threads: 5, jobsPerThread: 1 },
  { concurrency: 25, lockDuration: 2500, threads: 2 },
  { concurrency: 70, lockDuration: 3000 },
  { concurrency: 100, lockDuration: 3000 },
];

const ACTIVE_TYPES = ['waiting', 'active', 'delayed', 'prioritized', 'paused'] as const;

export async function runSoak(o: SoakOptions): Promise<SoakOutcome> {
  const dir = mkdtempSync(join(tmpdir(), 'zkq-soak-'));
  const rng = new Rng(o.seed);
  const log = new NdjsonLog(join(dir, 'history.ndjson'));
  const history: SoakHistory = {
    enqueues: [],
    unacked: [],
    readds: [],
    flows: [],
    workers: [],
    faults: [],
    finals: [],
    fifoQueues: [FIFO_QUEUE],
    extras: emptyExtras(),
  };
  const withExtras = history as SoakHistory & { extras: NonNullable<SoakHistory['extras']> };
  const started = Date.now();
  const elapsed = () => `${((Date.now() - started) / 1000).toFixed(1)} s`;
  o.print(`soak: seed ${o.seed}, ${o.seconds} s of faults, logs in ${dir}`);
  const workers: WorkerProcess[] = [];
  const proxies: TcpProxy[] = [];
  const queues: Queue[] = [];
  let flows: FlowFeeder | undefined;
  let zk: ZooKeeperServer | undefined;
  let keep = true;
  try {
    zk = await startZooKeeper();
    const server = zk;
    // The producer goes through a proxy of its own (to lose its replies); the final read does not.
    const producerProxy = await TcpProxy.start(server.connectionString);
    proxies.push(producerProxy);
    const direct = { connectionString: server.connectionString, sessionTimeout: 15_000 };
    const proxied = { ...direct, connectionString: producerProxy.connectionString };
    const spawnWorker = (
      name: string,
      connectionString: string,
      slot: { concurrency: number; lockDuration: number; threads?: number; jobsPerThread?: number },
    ) => {
      const w = WorkerProcess.spawn(dir, {
        name,
        queue: name === 'fifo' ? FIFO_QUEUE : CHAOS_QUEUE,
        connectionString,
        prefix: PREFIX,
        sessionTimeout: WORKER_SESSION_MS,
        stalledInterval: 1000,
        failRate: name === 'fifo' ? 0 : 0.15,
        slowRate: name === 'fifo' ? 0 : 0.2,
        ...(name === 'fifo'
          ? {}
          : {
              also: { queue: FLOW_QUEUE, concurrency: FLOW_QUEUE_CONCURRENCY },
              extra: { queue: EXTRA_QUEUE, concurrency: EXTRA_QUEUE_CONCURRENCY },
            }),
        ...slot,
      });
      workers.push(w);
      return w;
    };
    const fifoQueue = new Queue(FIFO_QUEUE, { connection: direct, prefix: PREFIX });
    const chaosQueue = new Queue(CHAOS_QUEUE, { connection: proxied, prefix: PREFIX });
    const inspector = new Queue(CHAOS_QUEUE, { connection: direct, prefix: PREFIX });
    const flowInspector = new Queue(FLOW_QUEUE, { connection: direct, prefix: PREFIX });
    const extraQueue = new Queue(EXTRA_QUEUE, { connection: proxied, prefix: PREFIX });
    const extraInspector = new Queue(EXTRA_QUEUE, { connection: direct, prefix: PREFIX });
    queues.push(fifoQueue, chaosQueue, inspector, flowInspector, extraQueue, extraInspector);
    await Promise.all(queues.map((q) => q.waitUntilReady()));
    const producer = new Producer(rng, log, history);
    flows = new FlowFeeder({
      connection: { ...proxied, namespace: PREFIX },
      queue: CHAOS_QUEUE,
      otherQueue: FLOW_QUEUE,
      // a stream of its own: the flows' timing does not shift the jobs' schedule
      rng: new Rng(o.seed + 1),
      log,
      history,
      nextSeq: () => producer.nextSeq(),
      perSecond: o.flowsPerSecond,
    });

    const extras = new ExtrasFeeder({
      rng: new Rng(o.seed + 2),
      log,
      history: withExtras,
      nextSeq: () => producer.nextSeq(),
      perSecond: EXTRAS_PER_SECOND,
      connection: { ...direct, namespace: PREFIX },
    });

    // 1. FIFO: a single consumer at concurrency 1, no faults.
    const fifoWorker = spawnWorker('fifo', server.connectionString, { concurrency: 1, lockDuration: 10_000 });
    const slots: Slot[] = await Promise.all(
      SLOTS.map(async (def, i) => {
        const proxy = await TcpProxy.start(server.connectionString);
        proxies.push(proxy);
        let generation = 0;
        const slot: Slot = {
          proxy,
          lockDuration: def.lockDuration,
          worker: spawnWorker(`w${i + 1}g0`, proxy.connectionString, def),
          async respawn() {
            slot.worker = spawnWorker(`w${i + 1}g${++generation}`, proxy.connectionString, def);
            await slot.worker.ready();
          },
        };
        return slot;
      }),
    );
    await Promise.all([fifoWorker, ...slots.map((s) => s.worker)].map((w) => w.ready()));
    o.print(`[${elapsed()}] ZooKeeper and ${workers.length} workers up; FIFO phase: ${o.fifoJobs} jobs`);
    await producer.runFifo(fifoQueue, o.fifoJobs);
    if (!(await drain([fifoQueue], 20_000 + o.fifoJobs * 100))) o.print(`[${elapsed()}] FIFO queue NOT drained`);
    await fifoWorker.kill();

    // 2. Chaos: load and faults until the deadline.
    o.print(`[${elapsed()}] chaos phase: ${o.seconds} s`);
    const until = Date.now() + o.seconds * 1000;
    // The large batch comes late: if it stalls the queue, the faults before it have had their time.
    const largeAt = Date.now() + o.seconds * 1000 * (0.75 + 0.1 * rng.next());
    const stop = () => Date.now() >= until;
    await extras.startSchedulers();
    const load = Promise.all([
      producer.runChaos(chaosQueue, o.jobsPerSecond, largeAt, stop, (line) => o.print(`[${elapsed()}] ${line}`)),
      flows.run(stop),
      extras.run(extraQueue, stop),
    ]);
    await runFaults({
      zk: server,
      slots,
      producerProxy,
      rng,
      until: until - 3000,
      maxFaults: Math.max(6, Math.ceil(o.seconds / 4)),
      leaderRestarts: o.leaderRestarts === true,
      record: (f) => {
        history.faults.push(f);
        log.append(f);
        o.print(`[${elapsed()}] fault ${f.kind} ${f.target} (${f.ms} ms${f.note ? `, ${f.note}` : ''})`);
      },
      warn: (line) => o.print(`[${elapsed()}] ${line}`),
    });
    await load;
    await extras.stopSchedulers();
    history.chaosEndedAt = Date.now();
    for (const s of slots) if (!s.worker.running) await s.respawn().catch(() => undefined);

    // 3. Drain, stop everything, read the end state.
    o.print(`[${elapsed()}] load stopped; draining (at most ${o.drainSeconds} s)`);
    const drained = await drain([inspector, flowInspector, extraInspector], o.drainSeconds * 1000);
    o.print(`[${elapsed()}] ${drained ? 'drained' : 'NOT drained by the deadline'}; stopping workers`);
    // read while the workers' sessions live: a node left behind is still there, with its owner
    const electionNodes = await readElections(server.connectionString, PREFIX, [CHAOS_QUEUE, FLOW_QUEUE]);
    await extras.readKeys(extraInspector);
    await Promise.all(workers.map((w) => w.kill()));
    history.endedAt = Date.now();
    history.finals = [
      ...(await readFinals(fifoQueue, history.enqueues)),
      ...(await readFinals(inspector, history.enqueues)),
      ...(await readFinals(flowInspector, history.enqueues)),
      ...(await readFinals(extraInspector, history.enqueues, true)),
    ];
    history.workers = readWorkerLogs(dir);
    const report = checkHistory(history);
    keep = report.violations.length > 0 || o.keepLogs === true;
    const failed = report.violations.length > 0 || !drained;
    // the printed report shows each queue's last 60 election steps; report.txt has them all
    const elections = (max: number) =>
      [
        ...describeElections(electionNodes, history.workers),
        ...[CHAOS_QUEUE, FLOW_QUEUE].flatMap((q) => [
          `election steps of ${q}${max > 0 ? ` (the last ${max})` : ''}, s since the soak began:`,
          ...electionTimeline(history.workers, history.faults, q, started, max),
        ]),
      ].join('\n');
    const text = `${formatReport(report, 25)}${failed ? `\n${elections(60)}` : ''}`;
    writeFileSync(join(dir, 'report.txt'), `${formatReport(report)}\n${elections(0)}\n`);
    // the whole history as checked, so that a changed checker can judge a kept run again
    if (keep) writeFileSync(join(dir, 'history.json'), JSON.stringify(history));
    o.print(`[${elapsed()}] checked\n${text}`);
    return { report, text, dir };
  } finally {
    await Promise.all(workers.map((w) => w.kill()));
    await flows?.close().catch(() => undefined);
    await Promise.all(proxies.map((p) => p.stop()));
    await Promise.all(queues.map((q) => q.close().catch(() => undefined)));
    await zk?.stop();
    log.close();
    if (!keep) rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Waits until nothing is waiting, delayed or active in any of `queues`
 * (twice in a row), or the deadline passes. A parent left in
 * waiting-children does not count: a child's plain failure leaves it there.
 */
async function drain(queues: Queue[], timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  let quiet = 0;
  while (Date.now() < deadline) {
    try {
      const counts = await Promise.all(queues.map((q) => q.getJobCounts(...ACTIVE_TYPES)));
      quiet = counts.every((c) => Object.values(c).every((n) => n === 0)) ? quiet + 1 : 0;
      if (quiet >= 2) return true;
    } catch {
      quiet = 0;
    }
    await sleep(500);
  }
  return false;
}
