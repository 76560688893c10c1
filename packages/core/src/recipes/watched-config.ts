/**
 * WatchedConfig: a value kept in one znode, mirrored locally and kept current
 * with data watches (kazoo's DataWatch, typed).
 *
 * Layout:
 *   <path>   PERSISTENT, data = the serialized value (JSON by default)
 * `start()` reads the node with a data watch; each change re-reads it and
 * sets the next watch. While the node does not exist, an exists-watch waits
 * for its creation and `value` is the `initial` value. A `WatchLoop` keeps
 * the watch armed until `close()`: a failed re-read is retried with backoff
 * (each failure emits `refreshFailed`), however long the outage.
 *
 * Suspended connection: `value` is kept (it may be stale until the
 * reconnect; the watch is re-registered by the client). Session lost:
 * watches are gone; once the session layer has built a new session the node
 * is read again, so changes made meanwhile are picked up.
 */
import { EventEmitter } from 'node:events';
import { ClosedError, InvalidArgumentError } from '../errors.js';
import { NodeExistsError, NoNodeError } from '../zk/errors.js';
import type { Session } from '../zk/session.js';
import type { Watcher } from '../zk/types.js';
import { WatchLoop } from '../zk/watch-loop.js';
import { checkPath } from './internals.js';

/** The node's data and version, as last read. */
interface Snapshot {
  data: Buffer;
  version: number;
}

/** Options of a `WatchedConfig`. */
export interface WatchedConfigOptions<T> {
  /** Turns node data into a value. Default: JSON of UTF-8 text. */
  parse?: (data: Buffer) => T;
  /** Turns a value into node data for `set()`. Default: JSON as UTF-8 text. */
  serialize?: (value: T) => Buffer;
  /** The value while the node does not exist. */
  initial?: T;
}

/** Typed events of a `WatchedConfig`. */
export interface WatchedConfigEvents<T> {
  /** The value changed (`undefined`: the node is gone and there is no initial value). */
  change: [value: T | undefined];
  /** The node's data could not be parsed; `value` keeps the previous value. */
  invalid: [error: unknown, data: Buffer];
  /** Reading the node failed; it is retried. */
  refreshFailed: [error: unknown];
}

const jsonParse = (data: Buffer): unknown => JSON.parse(data.toString('utf8'));
const jsonSerialize = (value: unknown): Buffer => Buffer.from(JSON.stringify(value));

/** A configuration value at `path`, kept current while started. */
export class WatchedConfig<T = unknown> extends EventEmitter<WatchedConfigEvents<T>> {
  readonly path: string;
  private readonly parse: (data: Buffer) => T;
  private readonly serialize: (value: T) => Buffer;
  private readonly initial: T | undefined;
  private current: T | undefined;
  private nodeVersion = -1;
  /** The data behind `value`; undefined while the node does not exist. */
  private raw: Buffer | undefined;
  private loop: WatchLoop<Snapshot | undefined> | undefined;
  private closed = false;

  constructor(
    private readonly session: Session,
    path: string,
    options: WatchedConfigOptions<T> = {},
  ) {
    super();
    this.path = checkPath(path);
    for (const key of ['parse', 'serialize'] as const) {
      if (options[key] !== undefined && typeof options[key] !== 'function') {
        throw new InvalidArgumentError(`${key} must be a function`, `options.${key}`);
      }
    }
    this.parse = options.parse ?? (jsonParse as (data: Buffer) => T);
    this.serialize = options.serialize ?? jsonSerialize;
    this.initial = options.initial;
    this.current = options.initial;
  }

  /** The current value (the initial value while the node does not exist). */
  get value(): T | undefined {
    return this.current;
  }

  /** The node's data version behind `value`, -1 while the node does not exist. */
  get version(): number {
    return this.nodeVersion;
  }

  /**
   * Reads the value and keeps it current. Resolves after the first read;
   * when that fails, rejects and follows nothing (call `start()` again).
   */
  async start(): Promise<void> {
    if (this.closed) throw new ClosedError(`config ${this.path}`);
    if (!this.loop) {
      this.loop = new WatchLoop(this.session, {
        read: (watch) => this.read(watch),
        onRead: (snapshot) => this.update(snapshot?.data, snapshot?.version ?? -1),
        onError: (err) => this.emit('refreshFailed', err),
      });
    }
    const loop = this.loop;
    try {
      await loop.start();
    } catch (err) {
      loop.close();
      if (this.loop === loop) this.loop = undefined;
      throw err;
    }
  }

  /** Writes `value` to the node (creating it and its parents when missing). */
  async set(value: T): Promise<void> {
    const data = this.serialize(value);
    try {
      await this.session.setData(this.path, data);
    } catch (err) {
      if (!(err instanceof NoNodeError)) throw err;
      await this.createWith(data);
    }
  }

  /** Stops following the node. */
  close(): void {
    this.closed = true;
    this.loop?.close();
    this.loop = undefined;
  }

  private async createWith(data: Buffer): Promise<void> {
    const parent = this.path.slice(0, this.path.lastIndexOf('/'));
    if (parent) await this.session.ensurePath(parent);
    try {
      await this.session.create(this.path, data);
    } catch (err) {
      if (!(err instanceof NodeExistsError)) throw err;
      await this.session.setData(this.path, data);
    }
  }

  /** Reads the node (or its absence, with an exists-watch for its creation). */
  private async read(watch: Watcher): Promise<Snapshot | undefined> {
    for (;;) {
      try {
        const { data, stat } = await this.session.getData(this.path, { watch });
        return { data, version: stat.version };
      } catch (err) {
        if (!(err instanceof NoNodeError)) throw err;
      }
      if (!(await this.session.exists(this.path, { watch }))) return undefined;
      // created in between: read it
    }
  }

  private update(data: Buffer | undefined, version: number): void {
    const unchanged = data === undefined ? this.raw === undefined : this.raw?.equals(data);
    this.nodeVersion = version;
    if (unchanged) return;
    let value: T | undefined = this.initial;
    if (data !== undefined) {
      try {
        value = this.parse(data);
      } catch (err) {
        this.emit('invalid', err, data);
        return;
      }
    }
    this.raw = data;
    this.current = value;
    this.emit('change', value);
  }
}
