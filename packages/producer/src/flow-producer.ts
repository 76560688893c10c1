/**
 * FlowProducer: adds trees of jobs, parents and their children, across the
 * queues of one namespace (BullMQ's FlowProducer, on ZooKeeper).
 *
 * ```ts
 * const flows = new FlowProducer({ connection: { connectionString: '127.0.0.1:2181' } });
 * const { job, children } = await flows.add({
 *   name: 'render', queueName: 'renders', data: { movie: 1 },
 *   children: [{ name: 'frame', queueName: 'frames', data: { n: 1 } }],
 * });
 * ```
 *
 * A flow is written whole in one transaction, or not at all, when it fits
 * one; a larger one in several, parents first, each counting every child it
 * gets from the start, so none runs early (docs/flows.md, "Large flows"). A
 * parent with children starts in waiting-children and is released (to
 * waiting, or delayed by its own delay) by its last child's finish; its
 * processor reads their results with `job.getChildrenValues()`. Every node
 * is validated here, before anything reaches ZooKeeper.
 */
import { EventEmitter } from 'node:events';
import {
  ClosedError,
  DEFAULT_PREFIX,
  type DefaultJobOptions,
  InvalidArgumentError,
  Job,
  JobExistsError,
  type JobsOptions,
  NodeExistsError,
  type QueueBaseOptions,
  type Session,
} from '@zkq/core';
import {
  addFlow,
  type EnqueueEntry,
  getDependencies,
  openSession,
  QueueStore,
  validateConnection,
  validateJobId,
  validateJobOptions,
  validatePrefix,
  validateQueueName,
} from '@zkq/core/internal';
import { buildRecords, type JobToBuild, linkTo, parentLinkOf, prepareJob } from './job-records.js';

/** Options of a flow's nodes: a flow adds no deduplicated jobs (BullMQ's FlowJob options, zkq's subset). */
export type FlowJobOptions = Omit<JobsOptions, 'deduplication'>;

/** A node below the root: its parent is the node above it. */
export interface FlowChildJob<DataType = any> {
  name: string;
  queueName: string;
  data?: DataType;
  /** The namespace, if given: the FlowProducer's own (the queues of a flow share one). */
  prefix?: string;
  opts?: Omit<FlowJobOptions, 'parent'>;
  children?: FlowChildJob[];
}

/** A flow: its root job, with children (each may have its own); `opts.parent` makes the root a child of an existing job. */
export interface FlowJob<DataType = any> extends Omit<FlowChildJob<DataType>, 'opts'> {
  opts?: FlowJobOptions;
}

/** Options of one `add`: per queue, default job options for the nodes in it. */
export interface FlowOpts {
  queuesOptions?: Record<string, { defaultJobOptions?: DefaultJobOptions }>;
}

/** A job of an added flow, with its children's nodes. */
export interface JobNode {
  job: Job;
  children?: JobNode[];
}

export interface FlowProducerListener {
  error: [error: Error];
}

/** A node in add order (parents before their children), where its parent is in that order. */
interface FlatNode {
  queue: string;
  job: JobToBuild;
  parent: number | undefined;
}

function validateFlowOpts(opts: FlowOpts | undefined): void {
  if (opts === undefined) return;
  const queues = (opts as FlowOpts | null)?.queuesOptions;
  if (typeof opts !== 'object' || opts === null || (queues !== undefined && (typeof queues !== 'object' || !queues))) {
    throw new InvalidArgumentError(
      'flow options must be { queuesOptions: { <queue>: { defaultJobOptions } } }',
      'opts',
    );
  }
  for (const [queue, o] of Object.entries(queues ?? {})) {
    validateQueueName(queue);
    validateJobOptions(o?.defaultJobOptions);
  }
}

export class FlowProducer extends EventEmitter<FlowProducerListener> {
  readonly opts: QueueBaseOptions;
  private readonly prefix: string;
  private readonly ready: Promise<Session>;
  private anchor: QueueStore | undefined;
  private closing: Promise<void> | undefined;
  /** Fires on close: a connect under way gives up. */
  private readonly closeSignal = new AbortController();

  constructor(opts: QueueBaseOptions) {
    super();
    if (!opts || typeof opts !== 'object')
      throw new InvalidArgumentError('FlowProducer options with a connection are required', 'opts');
    validateConnection(opts.connection);
    this.prefix = validatePrefix(opts.prefix ?? DEFAULT_PREFIX);
    this.opts = opts;
    this.ready = openSession(opts.connection, opts.prefix ?? DEFAULT_PREFIX, this.closeSignal.signal);
    this.ready.catch((err) => {
      if (this.listenerCount('error') > 0 && !this.closeSignal.signal.aborted) this.emit('error', err);
    });
  }

  /** Resolves once connected; rejects with the connection error. */
  async waitUntilReady(): Promise<Session> {
    return this.ready;
  }

  /** The ZooKeeper session, once connected. */
  get client(): Promise<Session> {
    return this.waitUntilReady();
  }

  /** The store of `queue` on this producer's session (all share one session and one executor family). */
  private async store(queue: string): Promise<QueueStore> {
    if (this.closing) throw new ClosedError('flow producer');
    this.anchor ??= new QueueStore(await this.ready, queue);
    return this.anchor.sibling(queue);
  }

  /**
   * Adds a flow (in one transaction when it fits one) and resolves with its
   * tree of jobs. Throws InvalidArgumentError (or InvalidJobDataError,
   * PayloadTooLargeError for a node too large for any transaction) for a bad
   * node, MissingParentError when the root's `opts.parent` does not exist,
   * JobExistsError when a node's custom `jobId` exists; nothing is written
   * then. A flow written in several transactions that fails midway fails the
   * parents it holds (docs/flows.md, "Large flows").
   */
  async add(flow: FlowJob, opts?: FlowOpts): Promise<JobNode> {
    const [node] = await this.addFlows([flow], opts, () => 'flow');
    return node as JobNode;
  }

  /** Adds several flows, in one transaction (all or none) when they fit one, as `add` does one. */
  async addBulk(flows: FlowJob[]): Promise<JobNode[]> {
    if (!Array.isArray(flows)) throw new InvalidArgumentError('addBulk takes an array of flows', 'flows');
    return this.addFlows(flows, undefined, (i) => `flows[${i}]`);
  }

  private async addFlows(
    flows: FlowJob[],
    opts: FlowOpts | undefined,
    where: (i: number) => string,
  ): Promise<JobNode[]> {
    validateFlowOpts(opts);
    const flat: FlatNode[] = [];
    for (const [i, f] of flows.entries()) this.flatten(f, where(i), opts, flat);
    if (flat.length === 0) return [];
    const root = await this.store((flat[0] as FlatNode).queue);
    const records = await this.records(flat);
    try {
      await addFlow(
        root,
        records.map((r, i) => ({ queue: (flat[i] as FlatNode).queue, record: r.record, lane: r.lane })),
        'refuse',
      );
    } catch (err) {
      throw await this.explain(err, flat, records);
    }
    const nodes: JobNode[] = [];
    for (const [i, f] of flat.entries()) {
      nodes[i] = { job: new Job(root.sibling(f.queue), (records[i] as EnqueueEntry).record) };
      if (f.parent === undefined) continue;
      const parent = nodes[f.parent] as JobNode;
      parent.children = [...(parent.children ?? []), nodes[i] as JobNode];
    }
    return flat.flatMap((f, i) => (f.parent === undefined ? [nodes[i] as JobNode] : []));
  }

  /** Validates a tree and lists its nodes, parents first. */
  private flatten(
    node: FlowJob | FlowChildJob,
    where: string,
    opts: FlowOpts | undefined,
    out: FlatNode[],
    parent?: number,
  ): void {
    if (!node || typeof node !== 'object') throw new InvalidArgumentError(`${where} must be a flow node`, where);
    validateQueueName(node.queueName);
    if (node.prefix !== undefined && validatePrefix(node.prefix) !== this.prefix) {
      throw new InvalidArgumentError(
        `${where}.prefix must be the FlowProducer's ('${this.prefix.slice(1)}'): a flow lives in one namespace`,
        `${where}.prefix`,
      );
    }
    const given = node.opts as JobsOptions | undefined;
    if (given?.deduplication !== undefined)
      throw new InvalidArgumentError('a flow node cannot have opts.deduplication', `${where}.opts.deduplication`);
    if (parent !== undefined && given?.parent !== undefined)
      throw new InvalidArgumentError('only a flow root may have opts.parent', `${where}.opts.parent`);
    const children = node.children ?? [];
    if (!Array.isArray(children)) throw new InvalidArgumentError(`${where}.children must be an array`, where);
    const defaults = opts?.queuesOptions?.[node.queueName]?.defaultJobOptions;
    const prepared = prepareJob({ name: node.name, data: node.data ?? {}, opts: given }, defaults, where);
    const job: JobToBuild = {
      ...prepared,
      parked: children.length > 0,
      parentLink: parentLinkOf(prepared.opts, this.prefix),
    };
    const custom = job.opts.jobId;
    if (custom !== undefined && out.some((f) => f.queue === node.queueName && f.job.opts.jobId === custom)) {
      throw new InvalidArgumentError(
        `jobId '${custom}' is used twice in queue '${node.queueName}'`,
        `${where}.opts.jobId`,
      );
    }
    const index = out.push({ queue: node.queueName, job, parent }) - 1;
    for (const [i, c] of children.entries()) this.flatten(c, `${where}.children[${i}]`, opts, out, index);
  }

  /** The records of the nodes (ids from each queue's counter), each child linked to its parent. */
  private async records(flat: FlatNode[]): Promise<EnqueueEntry[]> {
    const out: EnqueueEntry[] = [];
    for (const queue of new Set(flat.map((f) => f.queue))) {
      const mine = flat.flatMap((f, i) => (f.queue === queue ? [i] : []));
      const built = await buildRecords(
        await this.store(queue),
        mine.map((i) => (flat[i] as FlatNode).job),
      );
      for (const [k, i] of mine.entries()) out[i] = built[k] as EnqueueEntry;
    }
    for (const [i, f] of flat.entries()) {
      if (f.parent === undefined) continue;
      const parent = { queue: (flat[f.parent] as FlatNode).queue, id: (out[f.parent] as EnqueueEntry).record.id };
      (out[i] as EnqueueEntry).record.parentLink = linkTo(parent, f.job.opts);
    }
    return out;
  }

  /** A failed add's error, a taken custom id told as JobExistsError. */
  private async explain(err: unknown, flat: FlatNode[], records: EnqueueEntry[]): Promise<unknown> {
    if (!(err instanceof NodeExistsError)) return err;
    for (const [i, f] of flat.entries()) {
      const id = (records[i] as EnqueueEntry).record.id;
      if (err.path === (await this.store(f.queue)).layout.job(id)) return new JobExistsError(f.queue, id);
    }
    return err;
  }

  /**
   * The tree of job `id` of `queueName` as it stands: its children (of every
   * standing) down to `depth` levels (default 10), at most `maxChildren` per
   * job (default all). Undefined when the job does not exist.
   */
  async getFlow(opts: {
    id: string;
    queueName: string;
    depth?: number;
    maxChildren?: number;
  }): Promise<JobNode | undefined> {
    validateJobId(opts?.id, 'id');
    validateQueueName(opts.queueName);
    const depth = opts.depth ?? 10;
    const max = opts.maxChildren ?? Number.POSITIVE_INFINITY;
    if (!Number.isInteger(depth) || depth < 0) throw new InvalidArgumentError('depth must be an integer >= 0', 'depth');
    if (!(max >= 0)) throw new InvalidArgumentError('maxChildren must be a number >= 0', 'maxChildren');
    return this.readNode(await this.store(opts.queueName), opts.id, depth, max);
  }

  private async readNode(store: QueueStore, id: string, depth: number, max: number): Promise<JobNode | undefined> {
    const stored = await store.getJob(id);
    if (!stored) return undefined;
    const node: JobNode = { job: new Job(store, stored.record) };
    if (depth === 0) return node;
    const deps = await getDependencies(store, id);
    const keys = [
      ...deps.processed.map((d) => d.child),
      ...deps.unprocessed,
      ...deps.ignored.map((d) => d.child),
      ...deps.failed.map((d) => d.child),
    ].slice(0, max);
    const children = await Promise.all(keys.map((c) => this.readNode(store.sibling(c.queue), c.id, depth - 1, max)));
    const found = children.filter((c): c is JobNode => c !== undefined);
    if (found.length > 0) node.children = found;
    return node;
  }

  /**
   * Closes the connection. Idempotent. A connect still under way is given
   * up; the session waits for the server at most 3 s (Session.close).
   */
  close(): Promise<void> {
    this.closeSignal.abort();
    this.closing ??= this.ready.then(
      (session) => session.close(),
      () => undefined,
    );
    return this.closing;
  }
}
