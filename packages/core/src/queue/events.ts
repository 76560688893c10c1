/**
 * Queue events across processes, at a cost only while someone listens.
 *
 * A QueueEvents registers `events/listeners/<id>` (EPHEMERAL). Every writer
 * watches that directory; while it is non-empty, the writer adds ONE extra
 * node, `events/log/e-<seq>` holding a JSON array of the events, to the
 * transaction that caused them (an enqueue chunk, a claim batch, a finish
 * batch): no extra round trip, and nothing at all when nobody listens.
 * Readers follow the log in sequence order. The writer of every
 * TRIM_EVERY-th node trims the log to its last EVENTS_KEEP nodes, so a
 * reader that falls that far behind misses events (like a capped stream).
 */
import { NoNodeError } from '../zk/errors.js';
import type { Op } from '../zk/types.js';
import { sequenceOf } from './layout.js';
import type { QueueStore } from './store.js';

/** Event nodes kept in the log. */
export const EVENTS_KEEP = 1000;
const TRIM_EVERY = 200;
/** Values (return values, progress) larger than this are left out of events; read the job instead. */
export const EVENT_VALUE_LIMIT = 16 * 1024;

/** One queue event as stored in the log. */
export interface QueueEventRecord {
  event: string;
  jobId?: string;
  ts: number;
  [field: string]: unknown;
}

/** `value`, or undefined with a marker when its JSON is too large to travel in an event. */
export function eventValue(value: unknown): unknown {
  const json = JSON.stringify(value ?? null);
  return json.length > EVENT_VALUE_LIMIT ? { truncated: true, bytes: json.length } : value;
}

export class EventSink {
  private listeners = 0;
  private watching: Promise<void> | undefined;

  constructor(private readonly store: QueueStore) {}

  /** Whether events are written (someone listens). */
  get enabled(): boolean {
    return this.listeners > 0;
  }

  /** Starts following the listener directory (idempotent). */
  start(): Promise<void> {
    this.watching ??= this.refresh().catch((err) => {
      this.watching = undefined;
      throw err;
    });
    return this.watching;
  }

  private readonly onChange = (): void => {
    this.refresh().catch(() => {
      this.watching = undefined; // next start() tries again
    });
  };

  private async refresh(): Promise<void> {
    const { session, layout } = this.store;
    try {
      this.listeners = (await session.getChildren(layout.eventListeners, { watch: this.onChange })).length;
    } catch (err) {
      if (!(err instanceof NoNodeError)) throw err;
      await session.ensurePath(layout.eventListeners); // a queue made before events existed
      await session.ensurePath(layout.eventLog);
      this.listeners = (await session.getChildren(layout.eventListeners, { watch: this.onChange })).length;
    }
  }

  /** The op that logs `events` inside the caller's transaction, or undefined when nobody listens. */
  op(events: QueueEventRecord[]): Op | undefined {
    if (!this.enabled || events.length === 0) return undefined;
    return {
      op: 'create',
      path: this.store.layout.eventPrefix(),
      data: Buffer.from(JSON.stringify(events)),
      mode: 'persistent_sequential',
    };
  }

  /** Logs `events` on their own (for actions that run no transaction of their own). */
  async publish(events: QueueEventRecord[]): Promise<void> {
    const op = this.op(events);
    if (!op) return;
    const path = await this.store.session.create(op.path, (op as { data: Buffer }).data, 'persistent_sequential');
    this.afterWrite([path]);
  }

  /** Trims the log now and then, judged by the sequence numbers just written. */
  afterWrite(paths: (string | undefined)[]): void {
    for (const path of paths) {
      if (path?.startsWith(this.store.layout.eventPrefix()) && sequenceOf(path) % TRIM_EVERY === 0) {
        void this.trim(sequenceOf(path)).catch(() => undefined);
      }
    }
  }

  private async trim(latest: number): Promise<void> {
    const { session, layout } = this.store;
    const old = (await session.getChildren(layout.eventLog)).filter((n) => sequenceOf(n) <= latest - EVENTS_KEEP);
    for (let i = 0; i < old.length; i += 200) {
      const ops: Op[] = old.slice(i, i + 200).map((n) => ({ op: 'delete', path: `${layout.eventLog}/${n}` }));
      await session.multi(ops).catch(async (err) => {
        if (!(err instanceof NoNodeError)) throw err;
        await Promise.all(ops.map((o) => session.delete(o.path).catch(() => undefined)));
      });
    }
  }
}
