/**
 * WatchedConfig: a value kept in one znode, mirrored locally and kept current
 * with data watches (kazoo's DataWatch, typed).
 *
 * Layout:
 *   <path>   PERSISTENT, data = the serialized value (JSON by default)
 * `start()` reads the node with a data watch; each change re-reads it and
 * sets the next watch. While the node does not exist, an exists-watch waits
 * for its creation and `value` is the `initial` value.
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
import type { WatchEvent } from '../zk/types.js';
import { checkPath, retryInBackground } from './internals.js';

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
  private started = false;
  private closed = false;
  /** Bumped by each read; only the latest read's watch refreshes. */
  private generation = 0;
  private unsubscribe: (() => void) | undefined;

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

  /** Reads the value and keeps it current. Resolves after the first read. */
  async start(): Promise<void> {
    if (this.closed) throw new ClosedError(`config ${this.path}`);
    if (this.started) return;
    this.started = true;
    this.unsubscribe = this.session.onNewSession(() => void this.refreshOrRetry());
    await this.refresh();
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
    this.generation++;
    this.unsubscribe?.();
    this.unsubscribe = undefined;
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

  /** Reads the node (or its absence) with a watch that triggers the next read. */
  private async refresh(): Promise<void> {
    const generation = ++this.generation;
    const watch = (event: WatchEvent) => {
      if (event.type !== 'sessionLost' && generation === this.generation && !this.closed) void this.refreshOrRetry();
    };
    try {
      const { data, stat } = await this.session.getData(this.path, { watch });
      if (generation === this.generation) this.update(data, stat.version);
    } catch (err) {
      if (!(err instanceof NoNodeError)) throw err;
      const stat = await this.session.exists(this.path, { watch });
      if (stat) return this.refresh(); // created in between: read it
      if (generation === this.generation) this.update(undefined, -1);
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

  private refreshOrRetry(): Promise<void> {
    return retryInBackground(
      this.session,
      () => !this.closed,
      () => this.refresh(),
      (err) => this.emit('refreshFailed', err),
    );
  }
}
