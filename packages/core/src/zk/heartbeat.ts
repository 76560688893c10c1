/**
 * A session's heartbeat, ZooKeeper's own rule: a session that has sent
 * nothing for a third of the negotiated session timeout sends a cheap read,
 * and a connection over which no request sent in the last two thirds has
 * been answered is dead. The server expires a session one session timeout
 * after it last heard from it, and it heard from this one no earlier than
 * the send of the newest answered request: so the connection is dropped (and
 * `suspended` emitted, the wire client reconnecting at once) at least a
 * third of a session timeout before the server can expire the session,
 * whatever the request timeout, even when the link dies silently. Measured
 * on this process's monotonic clock only. The price: a server slower than
 * two thirds of the session timeout to answer is taken for gone (the session
 * reconnects, and resumes if it can).
 */

// node:timers' own functions, not the globals: a test that fakes the global
// timers (sinon, node:test's mock timers) must not freeze the heartbeat
import { clearTimeout, setTimeout } from 'node:timers';
import { DEFAULT_SESSION_TIMEOUT_MS } from './session-types.js';

/** What the heartbeat needs of its session's connection. */
export interface HeartbeatLink {
  /** The connection is up and the session not closed: the heartbeat runs. */
  beating(): boolean;
  /** Session timeout granted by the server, ms. */
  sessionTimeout(): number;
  /** Drops the connection (the wire client reconnects). */
  drop(): void;
  /** Sends the cheap read (it goes through `sent` and `heard` as any request). */
  probe(): Promise<unknown>;
}

export class Heartbeat {
  /** The next check. */
  private timer: NodeJS.Timeout | undefined;
  /** When the last request was sent, on the monotonic clock (the probe only runs on a quiet session). */
  private lastRequestAt = performance.now();
  /**
   * When the newest request the server has answered was sent, on the
   * monotonic clock: the server heard from this session then, or later.
   */
  private lastAnsweredAt = performance.now();
  private probeInFlight = false;

  constructor(private readonly link: HeartbeatLink) {}

  /** A request goes out now; returns when (for `heard`). */
  sent(): number {
    const sentAt = performance.now();
    this.lastRequestAt = sentAt;
    return sentAt;
  }

  /** A reply (or the handshake) came for a request sent at `sentAt`: the server heard from us then. */
  heard(sentAt: number): void {
    if (sentAt > this.lastAnsweredAt) this.lastAnsweredAt = sentAt;
  }

  /** Whether a request sent in the last two thirds of `sessionTimeout` was answered, read on the clock now. */
  isAlive(sessionTimeout: number): boolean {
    return performance.now() - this.lastAnsweredAt < deadAfterMs(sessionTimeout);
  }

  /** Checks the connection now, and again when the rule says (see the header). */
  start(): void {
    clearTimeout(this.timer);
    if (!this.link.beating()) return; // armed again on the next connection
    const timeout = this.link.sessionTimeout() || DEFAULT_SESSION_TIMEOUT_MS;
    const probeAfter = Math.floor(timeout / 3);
    const deadAfter = deadAfterMs(timeout);
    const now = performance.now();
    const unanswered = now - this.lastAnsweredAt;
    if (unanswered >= deadAfter) {
      this.link.drop();
      return;
    }
    const quiet = now - this.lastRequestAt;
    if (quiet >= probeAfter && !this.probeInFlight) {
      this.probeInFlight = true;
      this.link
        .probe()
        .catch(() => undefined)
        .finally(() => {
          this.probeInFlight = false;
        });
    }
    const sinceSend = now - this.lastRequestAt;
    const nextProbe = sinceSend >= probeAfter ? probeAfter : probeAfter - sinceSend;
    const wait = Math.max(1, Math.min(nextProbe, deadAfter - unanswered));
    this.timer = setTimeout(() => this.start(), Math.ceil(wait));
    this.timer.unref();
  }

  stop(): void {
    clearTimeout(this.timer);
  }
}

/** How long a connection may go without an answer to a request sent since before it is taken for dead. */
function deadAfterMs(sessionTimeout: number): number {
  return Math.floor(((sessionTimeout || DEFAULT_SESSION_TIMEOUT_MS) * 2) / 3);
}
