/**
 * The herd at the head of a queue: many idle workers on one queue, measured
 * from the server's own counters. ZooKeeper: packets received + sent
 * (`mntr`); Redis has no packet counter, so BullMQ's figure is commands
 * processed (`INFO stats`).
 */
import { clock, counterDelta, payload, round2, type ServerCounters, sleep } from './lib.js';
import type { RunContext } from './scenarios.js';
import { WorkerGroup } from './systems.js';

export interface HerdOptions {
  processes: number;
  workersPerProcess: number;
  /** Jobs added one at a time, each after the previous one completed, measured after one per worker. */
  jobs: number;
  /** Idle window over which the idle rate is measured, ms. */
  idleMs: number;
}

/** Time for started workers to finish their start-up traffic before the idle window. */
const SETTLE_MS = 2000;
/** Pause after each job's completion, so that the wake-ups it caused are over before the next add. */
const GAP_MS = 50;

/** Messages on the wire: ZooKeeper packets both ways, or Redis commands. */
const traffic = (d: ServerCounters) =>
  d.packetsReceived !== undefined ? (d.packetsReceived ?? 0) + (d.packetsSent ?? 0) : (d.commands ?? Number.NaN);

export async function benchHerd(ctx: RunContext, o: HerdOptions): Promise<void> {
  const { sys } = ctx;
  const workers = o.processes * o.workersPerProcess;
  ctx.log(`${sys.label} herd: ${workers} idle workers (${o.processes} processes × ${o.workersPerProcess})`);
  const q = sys.queue('herd');
  try {
    await q.waitUntilReady();
    const group = await WorkerGroup.start(
      sys,
      {
        queue: 'herd',
        processes: o.processes,
        workersPerProcess: o.workersPerProcess,
        concurrency: ctx.concurrency,
      },
      120_000 + (workers + o.jobs) * 1000,
    );
    try {
      await sleep(SETTLE_MS);
      const c0 = await sys.counters();
      const t0 = clock();
      await sleep(o.idleMs);
      const c1 = await sys.counters();
      const t1 = clock();
      const idle = counterDelta(c0, c1);
      const idlePerSec = (traffic(idle) * 1000) / (t1 - t0);
      /** Packets per job beyond idle while `n` jobs are added one at a time (after `from` finished ones). */
      const oneByOne = async (from: number, n: number) => {
        const a = await sys.counters();
        const ta = clock();
        for (let i = from; i < from + n; i++) {
          await q.add('job', payload({ i }), sys.retention('remove'));
          await group.waitFinished(i + 1);
          await sleep(GAP_MS);
        }
        await sleep(500);
        const b = await sys.counters();
        const busy = counterDelta(a, b);
        // Leave out what the idle workers would have exchanged anyway over the same time.
        return { busy, perJob: (traffic(busy) - (idlePerSec * (clock() - ta)) / 1000) / n };
      };
      // Each job goes to the first idle worker, who then queues up behind the others: the first
      // `workers` jobs meet workers that never ran one (their first claim arms more watches), the
      // jobs after that the steady state, which is what the target is about.
      const first = await oneByOne(0, workers);
      const { busy, perJob } = await oneByOne(workers, o.jobs);
      ctx.metrics[`${sys.name}.herd.idlePerSec`] = round2(idlePerSec);
      ctx.metrics[`${sys.name}.herd.perJob`] = round2(perJob);
      ctx.metrics[`${sys.name}.herd.firstPerJob`] = round2(first.perJob);
      if (idle.packetsReceived !== undefined) {
        ctx.metrics[`${sys.name}.herd.idleReceivedPerSec`] = round2((idle.packetsReceived * 1000) / (t1 - t0));
        ctx.metrics[`${sys.name}.herd.idleSentPerSec`] = round2(((idle.packetsSent ?? 0) * 1000) / (t1 - t0));
        ctx.metrics[`${sys.name}.herd.receivedPerJob`] = round2((busy.packetsReceived ?? 0) / o.jobs);
        ctx.metrics[`${sys.name}.herd.sentPerJob`] = round2((busy.packetsSent ?? 0) / o.jobs);
      }
      await group.stop();
    } finally {
      await group.kill();
    }
  } finally {
    await q.close();
  }
}
