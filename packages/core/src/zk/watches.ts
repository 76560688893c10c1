/**
 * A session's pending one-shot watches: each fires at most once, whichever
 * attempt of its read set it, and gets `sessionLost` when its session is.
 */
import type { Watcher } from './types.js';
import { eventType, type wire } from './wire.js';

/** A watcher as the wire client calls it. */
export type WireWatcher = (e: InstanceType<typeof wire.Event>) => void;

export class Watches {
  private readonly watchers = new Set<Watcher & { path?: string }>();
  /** Watchers pending per `kind:path`, so that re-arming the same function does not register it twice. */
  private readonly armed = new Map<string, Set<Watcher>>();

  /** `rel` gives the session's path of a server path. */
  constructor(private readonly rel: (path: string) => string) {}

  /**
   * Runs a read that may set a one-shot watch. One entry per call, shared by
   * all its attempts, so that a watch set by a retried (or late) attempt
   * fires at most once; a call that fails sets no watch. The same watcher
   * function armed again on the same path and kind before it fired is not
   * registered twice (the server keeps one watch anyway): callers that re-arm
   * a stable watcher on every poll do not pile up listeners.
   */
  async watched<T>(
    kind: 'exists' | 'data' | 'children',
    path: string,
    watcher: Watcher | undefined,
    run: (w?: WireWatcher) => Promise<T>,
  ): Promise<T> {
    if (!watcher) return run(undefined);
    const key = `${kind}:${path}`;
    const armed = this.armed.get(key) ?? new Set<Watcher>();
    if (armed.has(watcher)) return run(undefined);
    armed.add(watcher);
    this.armed.set(key, armed);
    const disarm = () => {
      armed.delete(watcher);
      if (armed.size === 0 && this.armed.get(key) === armed) this.armed.delete(key);
    };
    const entry: Watcher & { path?: string } = (event) => {
      disarm();
      watcher(event);
    };
    entry.path = path;
    this.watchers.add(entry);
    const wireWatcher: WireWatcher = (e) => {
      if (!this.watchers.delete(entry)) return;
      disarm();
      watcher({ type: eventType(e), path: this.rel(e.getPath()) });
    };
    try {
      return await run(wireWatcher);
    } catch (err) {
      this.watchers.delete(entry);
      disarm();
      throw err;
    }
  }

  /** The watches armed that have not fired yet, as `<exists|data|children>:<path>`. */
  keys(): string[] {
    return [...this.armed.keys()];
  }

  /** Tells every pending watch that the session is lost, and forgets them. */
  loseAll(): void {
    const pending = [...this.watchers];
    this.watchers.clear();
    for (const w of pending) w({ type: 'sessionLost', path: w.path ?? '/' });
  }

  /** Forgets every pending watch (the session closed). */
  clear(): void {
    this.watchers.clear();
  }
}
