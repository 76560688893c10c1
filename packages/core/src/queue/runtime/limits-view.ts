/**
 * LimitsView: whether a worker's claims must take the limited path (see
 * protocol/limited-claims.ts), known without a request per claim.
 *
 * A worker with its own `limiter` always takes it. Any other follows the
 * queue's `settings` (a data watch, or an exists-watch while there are none)
 * and whether a rate-limit window exists: an exists-watch while there is
 * none, and no watch while there is one (the limited path reads it with
 * every claim, and says when it is gone). Both watches are kept by
 * WatchLoops, so they re-arm after any failure and after a session expiry.
 * A limit set meanwhile is followed a watch later: claims already decided
 * without it may still commit (the limited path fences itself from then on).
 */
import { NoNodeError } from '../../zk/errors.js';
import type { Watcher } from '../../zk/types.js';
import { WatchLoop } from '../../zk/watch-loop.js';
import { effectiveLimits, parseSettings, type RateLimit } from '../protocol/limits.js';
import type { QueueStore } from '../store.js';
import { ServerClock } from './server-clock.js';

export class LimitsView {
  /** ZooKeeper's time, estimated (how long a limited worker waits). */
  readonly clock: ServerClock;
  private settings: Record<string, string> | undefined;
  private windowSeen = false;
  private loops: { close(): void }[] = [];
  private windowLoop: WatchLoop<boolean> | undefined;
  private started: Promise<void> | undefined;

  constructor(
    private readonly store: QueueStore,
    private readonly limiter: RateLimit | undefined,
    private readonly onError: (err: Error) => void,
  ) {
    this.clock = new ServerClock(store);
  }

  /** Reads the settings and the window once (with their watches); later calls share that. */
  start(): Promise<void> {
    if (this.limiter) return Promise.resolve(); // always limited: nothing to follow
    this.started ??= this.follow().catch((err) => {
      this.started = undefined;
      for (const l of this.loops) l.close();
      this.loops = [];
      throw err;
    });
    return this.started;
  }

  /** Claims must take the limited path. */
  get limited(): boolean {
    if (this.limiter || this.windowSeen) return true;
    const limits = effectiveLimits(this.settings);
    return limits.concurrency !== undefined || limits.rate !== undefined;
  }

  /** The limited path found no window: follow its creation again. */
  windowGone(): void {
    if (!this.windowSeen) return;
    this.windowSeen = false;
    this.windowLoop?.refresh();
  }

  close(): void {
    for (const l of this.loops) l.close();
  }

  private async follow(): Promise<void> {
    const { session, layout } = this.store;
    const report = (err: unknown) => this.onError(err instanceof Error ? err : new Error(String(err)));
    const settings = new WatchLoop<Buffer | undefined>(session, {
      read: (watch) => readWatched(this.store, layout.settings, watch),
      onRead: (data) => {
        this.settings = data ? parseSettings(data) : undefined;
      },
      onError: report,
    });
    const window = new WatchLoop<boolean>(session, {
      // While a window is known, no watch: the limited path reads it and says when it is gone.
      read: async (watch) => (await session.exists(layout.limiter, this.windowSeen ? {} : { watch })) !== null,
      onRead: (exists) => {
        if (exists) this.windowSeen = true;
      },
      onError: report,
    });
    this.loops = [settings, window];
    this.windowLoop = window;
    await Promise.all([settings.start(), window.start()]);
  }
}

/** A node's data with a data watch, or undefined with an exists-watch (to hear of its creation). */
async function readWatched(store: QueueStore, path: string, watch: Watcher): Promise<Buffer | undefined> {
  for (;;) {
    try {
      return (await store.session.getData(path, { watch })).data;
    } catch (err) {
      if (!(err instanceof NoNodeError)) throw err;
    }
    if ((await store.session.exists(path, { watch })) === null) return undefined;
  }
}
