/**
 * BullMQ's event stream over zkq's event log.
 *
 * BullMQ's QueueEvents reads a Redis stream: entries `<id> [field, value...]`
 * after a given id, blocking up to a timeout. Here an entry is one event of
 * a log node `events/log/e-<seq>`, and its id is `<seq>-<n>`: the n-th event
 * (from 1) of node `seq`. Sequence numbers grow in commit order, so a reader
 * that resumes from an id gets exactly the events logged after it; `<seq>-0`
 * (and `0`, `0-0`) is the position before node `seq`, `$` the end of the log.
 *
 * A read that finds nothing new waits on the log's children watch (see
 * EventLog), never polls. Values BullMQ parses (`completed`'s returnvalue,
 * `progress`'s data) travel as JSON; every other value as a string.
 */
import { InvalidArgumentError, NoNodeError } from '@zkq/core';
import { logEvents, type QueueEventRecord, type QueueStore, sequenceOf, trimEventLog } from '@zkq/core/internal';
import type { StreamReadRaw } from 'bullmq';
import type { BackendContext } from './context.js';
import { type Cursor, type EventLog, eventLogOf, existingEventLog, type LogNode, type Mark } from './event-log.js';

/** Log nodes one read returns at most (each holds the events of one transaction). */
const READ_NODES = 50;
/** The position before the first node of a log. */
const START: Cursor = { seq: -1, index: Number.POSITIVE_INFINITY };
/** Custom events trim the log every this many nodes (or every `maxEvents`, when fewer). */
const TRIM_EVERY = 100;

type Entry = [id: string, fields: string[]];

/** Registers a QueueEvents as a listener, so writers start logging events. */
export async function listen(ctx: BackendContext): Promise<void> {
  await eventLogOf(ctx).register();
}

/** Ends the registration; a read waiting for events returns null. */
export async function unlisten(ctx: BackendContext): Promise<void> {
  await existingEventLog(ctx)?.close();
}

/**
 * BullMQ's XREAD: the events after `id`, waiting up to `blockTimeout` ms
 * (no limit when not positive) for some; null when none came or on close.
 */
export async function readEvents(ctx: BackendContext, id: string, blockTimeout: number): Promise<StreamReadRaw> {
  const log = eventLogOf(ctx);
  try {
    return await read(ctx, log, id, blockTimeout);
  } catch (err) {
    if (log.closed) return null; // the session closed under the read
    throw err;
  }
}

async function read(ctx: BackendContext, log: EventLog, id: string, blockTimeout: number): Promise<StreamReadRaw> {
  if (log.closed) return null;
  const fromNow = id === '$';
  const parsed = fromNow ? undefined : parseId(id);
  await log.follow();
  const store = await ctx.store();
  log.dollar ??= log.tail();
  // The id the last read returned (BullMQ passes it back) belongs to the log it was read from.
  const mark: Mark = fromNow
    ? log.dollar
    : id === log.last?.id
      ? log.last
      : { id, cursor: parsed as Cursor, generation: log.generation };
  let { cursor, generation } = mark;
  const deadline = blockTimeout > 0 ? Date.now() + blockTimeout : Number.POSITIVE_INFINITY;
  for (;;) {
    if (log.closed) return null;
    if (generation !== log.generation) {
      // the log was deleted and made again: everything in the new one is later
      cursor = START;
      generation = log.generation;
    }
    const version = log.version;
    const at: Cursor = cursor;
    const fresh: LogNode[] = log.nodes.filter((n) => n.seq > at.seq || (n.seq === at.seq && at.index !== Infinity));
    if (fresh.length > 0) {
      const batch: LogNode[] = fresh.slice(0, READ_NODES);
      const entries = await readEntries(store, batch, at);
      if (entries.length > 0) {
        const [lastId] = entries[entries.length - 1] as Entry;
        log.last = { id: lastId, cursor: parseId(lastId), generation };
        if (fromNow) log.dollar = log.last;
        return [[`${ctx.prefix}:${ctx.name}:events`, entries]];
      }
      cursor = { seq: (batch[batch.length - 1] as LogNode).seq, index: Number.POSITIVE_INFINITY };
      continue; // those nodes were trimmed, or held nothing past the cursor
    }
    const left = deadline - Date.now();
    if (left <= 0) return null;
    await log.changed(version, left);
  }
}

/** `<seq>-<n>` or `<seq>` (as `<seq>-0`); anything else is refused. A Redis id (`<ms>-<n>`) reads as a position past this log. */
function parseId(id: string): Cursor {
  const m = /^(\d+)(?:-(\d+))?$/.exec(id);
  if (!m) throw new InvalidArgumentError(`invalid event id '${id}': use '$', '0' or an id QueueEvents emitted`, 'id');
  return { seq: Number(m[1]), index: Number(m[2] ?? 0) };
}

/** The events of `nodes` past `cursor`, as stream entries; trimmed or unreadable nodes are skipped. */
async function readEntries(store: QueueStore, nodes: LogNode[], cursor: Cursor): Promise<Entry[]> {
  const { session, layout } = store;
  const datas = await Promise.all(
    nodes.map((n) =>
      session.getData(`${layout.eventLog}/${n.name}`).then(
        (r) => r.data,
        (err) => {
          if (err instanceof NoNodeError) return undefined; // trimmed before we read it
          throw err;
        },
      ),
    ),
  );
  const entries: Entry[] = [];
  nodes.forEach((node, i) => {
    const events = parseBatch(datas[i]);
    events.forEach((e, j) => {
      if (node.seq === cursor.seq && j + 1 <= cursor.index) return;
      entries.push([`${node.seq}-${j + 1}`, toFields(e)]);
    });
  });
  return entries;
}

function parseBatch(data: Buffer | undefined): QueueEventRecord[] {
  if (!data) return [];
  try {
    const parsed = JSON.parse(data.toString()) as unknown;
    return Array.isArray(parsed) ? (parsed.filter((e) => e && typeof e === 'object') as QueueEventRecord[]) : [];
  } catch {
    return []; // not an event batch zkq wrote
  }
}

/** An event as BullMQ's stream fields: `event` first, the values BullMQ parses as JSON, the rest as strings. */
function toFields(e: QueueEventRecord): string[] {
  const { event, ts, ...rest } = e;
  const fields = ['event', String(event)];
  if (typeof ts !== 'number' && ts !== undefined) fields.push('ts', String(ts)); // a custom event's own field
  for (const [key, value] of Object.entries(rest)) {
    if (value === undefined) continue;
    const json = (event === 'progress' && key === 'data') || (event === 'completed' && key === 'returnvalue');
    fields.push(key, json ? JSON.stringify(value ?? null) : asString(value));
  }
  return fields;
}

function asString(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value !== null && typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/**
 * QueueEventsProducer's custom event: logged whether anyone listens or not
 * (a reader may ask for it later), its values as strings, as Redis keeps
 * them. Resolves with its id. The log keeps about `maxEvents` nodes.
 */
export async function publishEvent(
  ctx: BackendContext,
  fields: Record<string, string | number>,
  maxEvents: number,
): Promise<string> {
  const store = await ctx.store();
  const { event, ...rest } = fields;
  const record: QueueEventRecord = { event: String(event), ts: Date.now() };
  for (const [key, value] of Object.entries(rest)) if (value !== undefined) record[key] = asString(value);
  const path = await logEvents(store, [record]);
  const seq = path ? sequenceOf(path) : await lastSeq(store); // a lost reply: the newest node is ours or later
  const max = Math.max(1, Math.floor(maxEvents) || 1);
  if (Number.isFinite(maxEvents) && seq % Math.min(TRIM_EVERY, max) === 0) await trimEvents(ctx, max);
  return `${seq}-1`;
}

async function lastSeq(store: QueueStore): Promise<number> {
  const names = await store.children(store.layout.eventLog);
  return names.reduce((max, n) => Math.max(max, sequenceOf(n)), 0);
}

/**
 * Trims the log to its newest `maxLength` nodes: at least `maxLength`
 * events are kept, as Redis's approximate trimming keeps (a node holds the
 * events of one transaction). Resolves with the number of nodes removed.
 */
export async function trimEvents(ctx: BackendContext, maxLength: number): Promise<number> {
  return trimEventLog(await ctx.store(), maxLength);
}
