/**
 * Queue events across processes, at a cost only while someone listens.
 *
 * A QueueEvents registers `events/listeners/<id>` (EPHEMERAL). Every writer
 * watches that directory; while it is non-empty, the writer adds ONE extra
 * node, `events/log/e-<seq>` holding a JSON array of the events, to the
 * transaction that caused them (an enqueue chunk, a claim batch, a finish
 * batch): no extra round trip, and nothing at all when nobody listens.
 * Readers follow the log in sequence order. The transaction executor, which
 * writes every event node, trims the log to its last EVENTS_KEEP nodes every
 * EVENTS_TRIM_EVERY nodes, so a reader that falls that far behind misses
 * events (like a capped stream). A QueueEvents keeps its listener node
 * registered through protocol/event-listener.ts.
 *
 * An obliterate deletes the listeners' nodes with the queue; they register
 * again once the queue is made again, which the writer that makes it does
 * just before its first write. So a writer that saw listeners when the
 * queue went keeps logging while the directory is missing and for
 * LISTENER_RETURN_MS after it is back, whatever it lists meanwhile: the
 * listeners' first events in the new queue are not lost to their
 * re-registration (a listener that does not come back costs a few nodes).
 */
import { NoNodeError } from '../zk/errors.js';
import type { Session } from '../zk/session.js';
import type { Op } from '../zk/types.js';
import type { QueueEventRecord } from './event-record.js';
import type { QueueLayout } from './layout.js';
import { eventOp } from './protocol/builders.js';

export type { QueueEventRecord } from './event-record.js';

/** How long a writer keeps logging after the queue it saw listeners in is made again, ms (see the header). */
export const LISTENER_RETURN_MS = 5_000;
/** Wait before re-arming a watch whose re-arm failed, ms. */
const REARM_RETRY_MS = 500;
/**
 * Values (return values, progress) whose JSON is larger than this many bytes
 * are left out of events (read the job instead); a `failed` reason is cut to
 * MAX_REASON_BYTES, the same size (sizes.ts).
 */
export const EVENT_VALUE_LIMIT = 16 * 1024;

/** `value`, or undefined with a marker when its JSON is too large to travel in an event. */
export function eventValue(value: unknown): unknown {
  const json = JSON.stringify(value ?? null);
  if (json.length * 3 <= EVENT_VALUE_LIMIT) return value;
  const bytes = Buffer.byteLength(json);
  return bytes > EVENT_VALUE_LIMIT ? { truncated: true, bytes } : value;
}

export class EventSink {
  private listeners = 0;
  /** Listeners the last listing showed (not the optimistic count onChange sets). */
  private listed = 0;
  /** When a listing last showed listeners, or showed the last of them gone, performance.now(). */
  private listedAt = Number.NEGATIVE_INFINITY;
  /** Until when events are logged whatever is listed (after an obliterate; see the header), performance.now(). */
  private returnUntil = 0;
  private watching: Promise<void> | undefined;
  private closed = false;
  private retryTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly session: Session,
    private readonly layout: QueueLayout,
  ) {}

  /** Whether events are written (someone listens). */
  get enabled(): boolean {
    return this.listeners > 0 || performance.now() < this.returnUntil;
  }

  /** Starts following the listener directory (idempotent). */
  start(): Promise<void> {
    this.watching ??= this.refresh().catch((err) => {
      this.watching = undefined;
      throw err;
    });
    return this.watching;
  }

  /** Stops following the listener directory. */
  stop(): void {
    this.closed = true;
    clearTimeout(this.retryTimer);
  }

  // The watch re-arms after every change; a failed re-arm is retried until stop().
  private readonly onChange = (): void => {
    if (this.closed) return;
    // Log at once, before the re-read: a listener that just registered must not miss the
    // writes this process sends meanwhile (a last listener leaving costs an extra node at most).
    this.listeners = Math.max(this.listeners, 1);
    this.refresh().catch(() => {
      if (this.closed) return;
      this.retryTimer = setTimeout(this.onChange, REARM_RETRY_MS);
      this.retryTimer.unref();
    });
  };

  private async refresh(): Promise<void> {
    const { session, layout } = this;
    try {
      const listed = (await session.getChildren(layout.eventListeners, { watch: this.onChange })).length;
      // an obliterate deletes the listeners' nodes before their directory: the moment they went counts
      if (listed > 0 || this.listed > 0) this.listedAt = performance.now();
      this.listed = listed;
      this.listeners = listed;
      // back after an obliterate: the listeners seen before it have a while to register again
      if (this.returnUntil === Number.POSITIVE_INFINITY) this.returnUntil = performance.now() + LISTENER_RETURN_MS;
    } catch (err) {
      if (!(err instanceof NoNodeError)) throw err;
      // The queue was deleted (obliterate): its listeners come back once it is made again (see the
      // header). Never re-create it here; follow the directory's creation instead.
      if (performance.now() - this.listedAt < LISTENER_RETURN_MS) this.returnUntil = Number.POSITIVE_INFINITY;
      this.listeners = 0;
      this.listed = 0;
      if (await session.exists(layout.eventListeners, { watch: this.onChange })) await this.refresh();
    }
  }

  /** The op that logs `events` inside the caller's transaction, or undefined when nobody listens. */
  op(events: QueueEventRecord[]): Op | undefined {
    if (!this.enabled || events.length === 0) return undefined;
    return eventOp(this.layout, events);
  }
}
