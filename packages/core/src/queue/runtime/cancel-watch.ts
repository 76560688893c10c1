/**
 * CancelWatch: a worker process's side of cancel requests (see
 * protocol/cancels.ts). It follows the one directory where requests for
 * this process's jobs are filed, `cancels/w-<owner>`, and hands each request
 * naming an attempt it runs (same job, same token) to `cancel`, then
 * deletes it.
 *
 * - One children watch per process, and only while it holds jobs: nothing
 *   is read or watched before the first claim, and a fire while it holds
 *   none is not re-armed. (A watch armed before the last job ended stays on
 *   the server until it fires; it can only fire for a request for this
 *   owner, and is then not re-armed.) Requests for other workers' jobs are
 *   filed elsewhere, so this process is woken only when it can act.
 * - The watch is kept by a WatchLoop: re-armed after every fire, every
 *   failure (with backoff) and every new session, until `close()`.
 * - A request can be filed the moment a claim commits, before this process
 *   has registered the attempt: `claimed()` looks again when the last
 *   listing named that attempt, and arms the watch when it is not armed, so
 *   no request is missed and no claim costs a read otherwise.
 */
import type { Watcher } from '../../zk/types.js';
import { WatchLoop } from '../../zk/watch-loop.js';
import { type CancelRequest, dropCancelRequests, listCancelRequests, readCancelRequests } from '../protocol/cancels.js';
import type { QueueStore } from '../store.js';

export interface CancelWatchOptions {
  /** The worker name this process's claims carry (ClaimInfo.worker). */
  owner: string;
  /** Whether this process runs any attempt now. */
  holding(): boolean;
  /** The token of the attempt this process runs on job `id`, if it runs one. */
  tokenOf(id: string): number | undefined;
  /** Acts on a request for an attempt this process runs; the request is deleted after. */
  cancel(request: CancelRequest): void;
  /** A failed read or delete (the watch is re-armed anyway). */
  onError(error: unknown): void;
}

type Named = { id: string; token: number };

const key = (a: Named) => `${a.id}-${a.token}`;

export class CancelWatch {
  private loop: WatchLoop<Named[]> | undefined;
  /** A read armed the watch and no read has run since (a fire, a reconnect or a refresh starts one). */
  private armed = false;
  /** Attempts the last listing named that this process did not run then. */
  private listed = new Set<string>();
  private closed = false;

  constructor(
    private readonly store: QueueStore,
    private readonly opts: CancelWatchOptions,
  ) {}

  /** An attempt started here: arm the watch if it is not, look again if its request was listed before. */
  claimed(id: string, token: number): void {
    if (this.closed) return;
    if (!this.loop) {
      this.start();
      return;
    }
    if (!this.armed || this.listed.has(key({ id, token }))) this.loop.refresh();
  }

  close(): void {
    this.closed = true;
    this.loop?.close();
  }

  private start(): void {
    const loop = new WatchLoop<Named[]>(this.store.session, {
      read: (watch) => this.read(watch),
      onRead: (named) => this.act(named),
      onError: (err) => this.opts.onError(err),
    });
    this.loop = loop;
    loop.start().catch((err) => this.opts.onError(err));
  }

  private async read(watch: Watcher): Promise<Named[]> {
    this.armed = false;
    if (!this.opts.holding()) {
      this.listed.clear();
      return [];
    }
    const named = await listCancelRequests(this.store, this.opts.owner, watch);
    this.armed = true;
    return named;
  }

  private async act(named: Named[]): Promise<void> {
    const mine = named.filter((a) => this.opts.tokenOf(a.id) === a.token);
    this.listed = new Set(named.filter((a) => !mine.includes(a)).map(key));
    if (mine.length === 0) return;
    const { requests, stale } = await readCancelRequests(this.store, this.opts.owner, mine);
    for (const r of requests) this.opts.cancel(r);
    // acted on, or left by an earlier attempt on another pointer (whose tokens this attempt repeats);
    // one of those rewritten meanwhile for this attempt is read again
    if (await dropCancelRequests(this.store, this.opts.owner, [...requests, ...stale])) this.loop?.refresh();
  }
}
