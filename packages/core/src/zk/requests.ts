/**
 * A session's requests in flight: each sent with a timeout, its wire error
 * made the typed error naming its path, and those still waiting on a wire
 * client that will never answer them failed at once.
 */

// node:timers' own functions, not the globals: a test that fakes the global
// timers (sinon, node:test's mock timers) must not freeze request timeouts
import { clearTimeout, setTimeout } from 'node:timers';
import { BadArgumentsError, errorFromCode, RequestTimeoutError, ZK_CODES, type ZooKeeperError } from './errors.js';
import { type WireClient, wireErrorCode } from './wire.js';

export type Callback<T> = (err: unknown, result?: T) => void;

/** What requests need of their session's connection. */
export interface RequestLink {
  /** The error a request for `path` gets at once (the session closed or failed for good), or undefined. */
  refusal(path: string): ZooKeeperError | undefined;
  /** The wire client requests go to now. */
  client(): WireClient;
  /** How long a request waits for its reply, ms. */
  timeoutMs(): number;
  /** A request goes out now; returns when, for `answered`. */
  sent(): number;
  /** The server answered a request sent at `sentAt` on the current client. */
  answered(sentAt: number): void;
  /** A request to `client` went unanswered for the whole request timeout. */
  unanswered(client: WireClient): void;
}

export class Requests {
  /** Requests awaiting a reply, with the wire client they went to (see `failPending`). */
  private readonly pending = new Set<{ client: WireClient; fail: (error: (path: string) => ZooKeeperError) => void }>();

  constructor(private readonly link: RequestLink) {}

  /** Sends one request with a timeout, mapping wire errors to typed errors. */
  call<T>(path: string, send: (client: WireClient, cb: Callback<T>) => void): Promise<T> {
    const refused = this.link.refusal(path);
    if (refused) return Promise.reject(refused);
    const sentAt = this.link.sent();
    const timeoutMs = this.link.timeoutMs();
    const client = this.link.client();
    return new Promise<T>((resolve, reject) => {
      const entry = {
        client,
        fail: (make: (path: string) => ZooKeeperError) => settle(make(path)),
      };
      const settle = (err: unknown, result?: T) => {
        clearTimeout(timer);
        this.pending.delete(entry);
        if (err) reject(err);
        else resolve(result as T);
      };
      const timer = setTimeout(() => {
        settle(new RequestTimeoutError(timeoutMs, path));
        this.link.unanswered(client);
      }, timeoutMs);
      this.pending.add(entry);
      try {
        send(client, (err, result) => {
          if (client === this.link.client() && isServerReply(err)) this.link.answered(sentAt);
          settle(err ? toTypedError(err, path) : undefined, result);
        });
      } catch (err) {
        settle(new BadArgumentsError(err instanceof Error ? err.message : String(err), path));
      }
    });
  }

  /**
   * Rejects every request still waiting on `client`. The wire client fails the
   * requests it has sent when its socket closes, but requests queued while it
   * was disconnected would wait for a client that will never send them: they
   * fail now instead of at the request timeout (they never reached a server).
   */
  failPending(client: WireClient, error: (path: string) => ZooKeeperError): void {
    for (const p of [...this.pending]) if (p.client === client) p.fail(error);
  }
}

/** Maps a wire error to its typed error; a multi's per-op results ride along for `multiError`. */
function toTypedError(err: unknown, path: string): unknown {
  const code = wireErrorCode(err);
  if (code === undefined) return err;
  const typed = errorFromCode(code, path);
  const results = (err as { results?: unknown }).results;
  if (results) (typed as unknown as { results: unknown }).results = results;
  return typed;
}

/** Whether a wire callback's outcome came from the server (not from a connection that closed under it). */
function isServerReply(err: unknown): boolean {
  if (!err) return true;
  const code = wireErrorCode(err);
  return code !== undefined && code !== ZK_CODES.CONNECTION_LOSS && code !== ZK_CODES.SESSION_EXPIRED;
}
