/**
 * The soak's flows, added through BullMQ's FlowProducer on the ZooKeeper
 * backend: a parent in the chaos queue with 2-5 children, each in the same
 * queue or in a second one; some children with failParentOnFailure or
 * ignoreDependencyOnFailure, a few doomed (their processor throws in every
 * attempt). Every job of a flow has a custom id (`f<seq>`), so that a flow
 * whose add threw but committed is found and checked too. Each flow is
 * logged, acknowledged or not, and its jobs as enqueues (or unacknowledged
 * enqueues), named `j<seq>` like the producer's.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { createZooKeeperBackend, type ZooKeeperConnectionOptions } from '@zkq/bullmq';
import { type FlowJob, type JobsOptions, withBackend } from 'bullmq';
import {
  type ChildPolicy,
  dataHash,
  type EnqueueEvent,
  type FlowChild,
  type FlowData,
  type FlowEvent,
  type NdjsonLog,
  type SoakHistory,
  type UnackedEnqueueEvent,
} from './history.js';
import type { Rng } from './rng.js';

const { FlowProducer } = withBackend(createZooKeeperBackend);

/** Finished jobs stay, so that every job can be checked at the end. */
const KEEP = { removeOnComplete: false, removeOnFail: false } as const;

interface Node {
  q: string;
  seq: number;
  data: FlowData & { pad: string };
  opts: JobsOptions & { jobId: string };
}

export interface FlowFeederOptions {
  connection: ZooKeeperConnectionOptions;
  /** The parents' queue (children go there too, or to `otherQueue`). */
  queue: string;
  otherQueue: string;
  rng: Rng;
  log: NdjsonLog;
  history: Pick<SoakHistory, 'enqueues' | 'unacked' | 'flows'>;
  /** Flows added per second, on average. */
  perSecond: number;
  /** The producer's sequence: flow jobs share its `j<seq>` names. */
  nextSeq(): number;
}

export class FlowFeeder {
  private readonly producer: InstanceType<typeof FlowProducer>;

  constructor(private readonly o: FlowFeederOptions) {
    this.producer = new FlowProducer({ connection: o.connection });
    // connection trouble surfaces as a rejected add, logged as unacknowledged
    this.producer.on('error', () => undefined);
  }

  /** Adds a flow at a time, about `perSecond` a second, until `stop()` is true. */
  async run(stop: () => boolean): Promise<void> {
    const mean = 1000 / this.o.perSecond;
    while (!stop()) {
      await this.add();
      await sleep(this.o.rng.int(Math.round(mean / 3), Math.round((mean * 5) / 3)));
    }
  }

  close(): Promise<void> {
    return this.producer.close();
  }

  private node(q: string, seq: number, flow: number, extra: Partial<FlowData> = {}): Node {
    const data = { flow, seq, ...extra, pad: 'x'.repeat(this.o.rng.int(0, 400)) };
    return { q, seq, data, opts: { ...KEEP, jobId: `f${seq}` } };
  }

  private child(parentSeq: number): { node: Node; spec: FlowChild } {
    const { rng, queue, otherQueue } = this.o;
    const q = rng.chance(0.5) ? queue : otherQueue;
    const doomed = rng.chance(0.12);
    const policy = rng.pick<ChildPolicy>(['wait', 'wait', 'fail-parent', 'ignore']);
    const node = this.node(q, this.o.nextSeq(), parentSeq, doomed ? { doomed: true } : {});
    const attempts = rng.pick([1, 2, 3]);
    node.opts.attempts = attempts;
    if (attempts > 1) node.opts.backoff = rng.pick([100, { type: 'exponential', delay: 100 }]);
    if (rng.chance(0.2)) node.opts.delay = rng.int(50, 2000);
    if (rng.chance(0.2)) node.opts.priority = rng.pick([1, 5]);
    if (policy === 'fail-parent') node.opts.failParentOnFailure = true;
    if (policy === 'ignore') node.opts.ignoreDependencyOnFailure = true;
    return { node, spec: { q, id: node.opts.jobId, seq: node.seq, policy, doomed } };
  }

  private async add(): Promise<void> {
    const { rng, queue } = this.o;
    const seq = this.o.nextSeq();
    const parent = this.node(queue, seq, seq, { parent: true });
    parent.opts.attempts = rng.pick([1, 2]);
    if (rng.chance(0.2)) parent.opts.delay = rng.int(50, 1000);
    if (rng.chance(0.2)) parent.opts.priority = rng.pick([1, 5]);
    const kids = Array.from({ length: rng.int(2, 5) }, () => this.child(seq));
    const flow: FlowJob = {
      name: `j${seq}`,
      queueName: queue,
      data: parent.data,
      opts: parent.opts,
      children: kids.map(({ node }) => ({ name: `j${node.seq}`, queueName: node.q, data: node.data, opts: node.opts })),
    };
    const event: FlowEvent = {
      k: 'flow',
      acked: false,
      q: queue,
      id: parent.opts.jobId,
      seq,
      children: kids.map((k) => k.spec),
      ts: 0,
    };
    const nodes = [parent, ...kids.map((k) => k.node)];
    try {
      await this.producer.add(flow);
      event.acked = true;
      event.ts = Date.now();
      for (const n of nodes) this.enqueued(n, event.ts);
    } catch (err) {
      event.ts = Date.now();
      event.error = (err as Error).message;
      for (const q of new Set(nodes.map((n) => n.q))) {
        const mine = nodes.filter((n) => n.q === q);
        const e: UnackedEnqueueEvent = {
          k: 'enqueue-unacked',
          q,
          seqs: mine.map((n) => n.seq),
          hashes: mine.map((n) => dataHash(n.data)),
          error: event.error,
          ts: event.ts,
        };
        this.o.history.unacked.push(e);
        this.o.log.append(e);
      }
    }
    this.o.history.flows.push(event);
    this.o.log.append(event);
  }

  private enqueued(n: Node, ts: number): void {
    const e: EnqueueEvent = {
      k: 'enqueue',
      q: n.q,
      id: n.opts.jobId,
      seq: n.seq,
      priority: n.opts.priority ?? 0,
      delay: n.opts.delay ?? 0,
      attempts: n.opts.attempts ?? 1,
      custom: true,
      hash: dataHash(n.data),
      bytes: Buffer.byteLength(JSON.stringify(n.data)),
      ts,
    };
    this.o.history.enqueues.push(e);
    this.o.log.append(e);
  }
}
