/**
 * Looking at queues without changing them. `stats`, `jobs`, `job`, `leader`,
 * `queues` and `events` go through here and create nothing: not the queue,
 * not the namespace (connecting a session in a namespace creates its node,
 * so existence is asked first on a session at the root). A queue that does
 * not exist is QueueNotFoundError (exit 8).
 *
 * States follow BullMQ: while the queue is paused its waiting jobs are
 * `paused` (in counts, in listings and for one job alike).
 */
import { Job, type JobCounts, type JobState, NoNodeError, Session } from '@zkq/core';
import {
  decodeQueueName,
  getJobCounts,
  type JobRecord,
  jobState,
  listJobIds,
  openSession,
  QueueLayout,
  QueueStore,
  validatePrefix,
  validateQueueName,
} from '@zkq/core/internal';
import { connectionOf, type GlobalArgs, prefixOf } from './context.js';
import { QueueNotFoundError } from './errors.js';

/** States `zkq jobs` lists (`wait` is BullMQ's name for `waiting`). */
export const LIST_STATES = [
  'waiting',
  'active',
  'delayed',
  'prioritized',
  'completed',
  'failed',
  'paused',
  'waiting-children',
] as const;
export type ListState = (typeof LIST_STATES)[number];

/** A job as the CLI shows it: the record, its state now, live progress, when it is due. */
export interface JobView {
  job: Job;
  state: JobState | 'paused' | 'unknown';
  /** Live progress of an active job (its claim node), else the record's. */
  progress: unknown;
  /** When a delayed job is due (ms), else undefined. */
  due: number | undefined;
}

/** Runs `fn` with a session at the ZooKeeper root (no namespace: nothing is created). */
async function withRootSession<T>(args: GlobalArgs, fn: (session: Session) => Promise<T>): Promise<T> {
  const session = await Session.connect(connectionOf(args));
  try {
    return await fn(session);
  } finally {
    await session.close();
  }
}

/** The namespace node's absolute path, e.g. `/zkq`. */
function namespacePath(args: GlobalArgs): string {
  return validatePrefix(prefixOf(args));
}

/** Runs `fn` with a session in the namespace, or resolves undefined when the namespace does not exist. */
async function inNamespace<T>(args: GlobalArgs, fn: (session: Session) => Promise<T>): Promise<T | undefined> {
  const exists = await withRootSession(args, async (root) => (await root.exists(namespacePath(args))) !== null);
  if (!exists) return undefined;
  const session = await openSession(connectionOf(args), prefixOf(args));
  try {
    return await fn(session);
  } finally {
    await session.close();
  }
}

/** Throws QueueNotFoundError unless `queue` exists; creates nothing. */
export async function assertQueueExists(args: GlobalArgs, queue: string): Promise<void> {
  validateQueueName(queue);
  const meta = `${namespacePath(args)}${new QueueLayout(queue).meta}`;
  const found = await withRootSession(args, (root) => root.exists(meta));
  if (!found) throw new QueueNotFoundError(queue, prefixOf(args));
}

/** Runs `fn` on an existing queue; QueueNotFoundError when it does not exist (or is deleted meanwhile). */
export async function withReader<T>(
  args: GlobalArgs,
  queue: string,
  fn: (reader: QueueReader) => Promise<T>,
): Promise<T> {
  validateQueueName(queue);
  const missing = () => new QueueNotFoundError(queue, prefixOf(args));
  const result = await inNamespace(args, async (session) => {
    const store = new QueueStore(session, queue);
    if (!(await store.attach())) throw missing();
    try {
      return { value: await fn(new QueueReader(store)) };
    } catch (err) {
      if (err instanceof NoNodeError && !(await session.exists(store.layout.meta))) throw missing();
      throw err;
    }
  });
  if (!result) throw missing();
  return result.value;
}

/** Every queue under the namespace (nodes with a readable `meta`), sorted, each opened for reading. */
export async function withEveryQueue<T>(args: GlobalArgs, fn: (reader: QueueReader) => Promise<T>): Promise<T[]> {
  const results = await inNamespace(args, async (session) => {
    const out: T[] = [];
    for (const store of await queueStoresIn(session)) out.push(await fn(new QueueReader(store)));
    return out;
  });
  return results ?? [];
}

/** The names of every queue under the namespace, sorted; creates nothing. */
export async function listQueueNames(args: GlobalArgs): Promise<string[]> {
  return (await inNamespace(args, queueNamesIn)) ?? [];
}

/** The queues under a session's namespace, sorted (a session rooted at the namespace). */
export async function queueNamesIn(session: Session): Promise<string[]> {
  return (await queueStoresIn(session)).map((s) => s.queue);
}

async function queueStoresIn(session: Session): Promise<QueueStore[]> {
  const names = (await session.getChildren('/'))
    .map(decodeQueueName)
    .filter((n): n is string => n !== undefined && isQueueName(n))
    .sort();
  const stores: QueueStore[] = [];
  for (const name of names) {
    const store = new QueueStore(session, name);
    if (await store.attach().catch(() => false)) stores.push(store);
  }
  return stores;
}

function isQueueName(name: string): boolean {
  try {
    validateQueueName(name);
    return true;
  } catch {
    return false;
  }
}

/** Read-only views of one queue. */
export class QueueReader {
  constructor(readonly store: QueueStore) {}

  get name(): string {
    return this.store.queue;
  }

  get session(): Session {
    return this.store.session;
  }

  isPaused(): Promise<boolean> {
    return this.store.isPaused();
  }

  /** Counts per state, as `Queue.getJobCounts()` gives them. */
  counts(): Promise<JobCounts> {
    return getJobCounts(this.store, []);
  }

  /** Jobs in `state`, positions `start`..`end` inclusive (-1: to the end); finished ones newest first. */
  async list(state: ListState, start: number, end: number): Promise<JobView[]> {
    const paused = await this.isPaused();
    // BullMQ's way: a paused queue has no waiting jobs, they are paused.
    if ((state === 'waiting' && paused) || (state === 'paused' && !paused)) return [];
    const type = state === 'paused' ? 'waiting' : state;
    const asc = state !== 'completed' && state !== 'failed';
    const limit = end < 0 ? Number.MAX_SAFE_INTEGER : end + 1;
    const ids = (await listJobIds(this.store, type, limit, asc)).slice(start, end < 0 ? undefined : end + 1);
    const views = await Promise.all(ids.map((id) => this.view(id, state)));
    return views.filter((v): v is JobView => v !== undefined);
  }

  /** One job with its current state, or undefined when there is no such job. */
  async job(id: string): Promise<JobView | undefined> {
    const [state, paused] = await Promise.all([jobState(this.store, id), this.isPaused()]);
    if (state === 'unknown') return undefined;
    return this.view(id, state === 'waiting' && paused ? 'paused' : state);
  }

  private async view(id: string, state: JobView['state']): Promise<JobView | undefined> {
    const [stored, claim] = await Promise.all([
      this.store.getJob(id),
      state === 'active' ? this.store.getClaim(id) : undefined,
    ]);
    if (!stored) return undefined; // removed meanwhile
    const record: JobRecord = stored.record;
    return {
      job: new Job(this.store, record),
      state,
      progress: claim?.progress !== undefined ? claim.progress : record.progress,
      due: state === 'delayed' ? record.due : undefined,
    };
  }
}
