/**
 * LimitsView: whether a worker's claims must take the limited path (see
 * protocol/limited-claims.ts), known without a request per claim.
 *
 * A worker with its own `limiter` always takes it. Any other follows the
 * queue's `settings` and its window node (`limiter`, written only when a
 * window opens: counts go to its child), each by a data watch, or an
 * exists-watch while the node is missing. A manual window (`rateLimit(ms)`)
 * limits every worker: seen, it sends claims down the limited path until
 * that path finds nothing limiting them any more. Both watches are kept by
 * WatchLoops, so they re-arm after any failure and after a session expiry.
 * A watch event alone switches to the limited path (which reads the settings
 * itself), before the re-read. A limit set meanwhile is followed one watch
 * later: a claim already sent without it may still commit; from then on the
 * limited path fences every claim.
 */
import { NoNodeError } from '../../zk/errors.js';
import type { Watcher } from '../../zk/types.js';
import { WatchLoop } from '../../zk/watch-loop.js';
import { effectiveLimits, parseSettings, parseWindowData, type RateLimit } from '../protocol/limits.js';
import type { QueueStore } from '../store.js';
import { ServerClock } from './server-clock.js';

export class LimitsView {
  /** ZooKeeper's time, estimated (how long a limited worker waits). */
  readonly clock: ServerClock;
  private settings: Record<string, string> | undefined;
  /** The settings changed and were not read again yet. */
  private settingsChanged = false;
  private windowSeen = false;
  private settingsWatch: Watcher | undefined;
  private windowWatch: Watcher | undefined;
  private loops: { close(): void }[] = [];
  private started: Promise<void> | undefined;

  constructor(
    private readonly store: QueueStore,
    private readonly limiter: RateLimit | undefined,
    private readonly onError: (err: Error) => void,
    /** The settings changed (a limit set or removed): a waiting worker looks again. */
    private readonly onChange: () => void = () => undefined,
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
    if (this.limiter || this.windowSeen || this.settingsChanged) return true;
    const limits = effectiveLimits(this.settings);
    return limits.concurrency !== undefined || limits.rate !== undefined;
  }

  /** The limited path found nothing limiting claims (the manual window ended): back to the plain path. */
  windowGone(): void {
    this.windowSeen = false;
  }

  close(): void {
    for (const l of this.loops) l.close();
  }

  private async follow(): Promise<void> {
    const { session, layout } = this.store;
    const report = (err: unknown) => this.onError(err instanceof Error ? err : new Error(String(err)));
    // The loop passes the same watcher every time; so does each wrapper (made once), which the
    // session then never registers twice on one path.
    const settings = new WatchLoop<Buffer | undefined>(session, {
      read: (watch) => {
        this.settingsWatch ??= (e) => {
          this.settingsChanged = true;
          watch(e);
          this.onChange();
        };
        return readWatched(this.store, layout.settings, this.settingsWatch);
      },
      onRead: (data) => {
        this.settings = data ? parseSettings(data) : undefined;
        this.settingsChanged = false;
      },
      onError: report,
    });
    const window = new WatchLoop<Buffer | undefined>(session, {
      read: (watch) => {
        this.windowWatch ??= (e) => {
          if (e.type === 'created' || e.type === 'dataChanged') this.windowSeen = true; // read it on the limited path
          watch(e);
        };
        return readWatched(this.store, layout.limiter, this.windowWatch);
      },
      onRead: (data) => {
        const w = data ? parseWindowData(data) : undefined;
        this.windowSeen = w?.manual === true && w.ms > 0;
      },
      onError: report,
    });
    this.loops = [settings, window];
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
