/**
 * How a closing client tells that ZooKeeper is out of reach: it asks.
 *
 * A close waits for writes (results, leaving an election, closing the
 * session) that an unreachable server will never answer, and the session
 * layer only notices a frozen link after a request timeout and a session
 * timeout. `untilSilent` sends a cheap read now and again while the close
 * goes on, and resolves once none has been answered for `ms`: the closer
 * then stops waiting. A server that answers, however slowly it applies the
 * close's own writes, keeps the close going.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Session } from './session.js';

/** Pause between two answered probes, ms (at most half the bound). */
const PROBE_EVERY_MS = 1000;
/** Pause after a probe failed at once (connection loss, expiry), ms. */
const PROBE_RETRY_MS = 100;

/**
 * Resolves once ZooKeeper has answered nothing for `ms` on `session()` (the
 * session of the moment; while there is none yet, a connect still under way,
 * nothing is answered either); never once `signal` has fired (the caller
 * finished in time). A session already closed answers nothing.
 */
export async function untilSilent(session: () => Session | undefined, ms: number, signal: AbortSignal): Promise<void> {
  let answeredAt = performance.now();
  while (!signal.aborted) {
    const left = answeredAt + ms - performance.now();
    if (left <= 0) return;
    const s = session();
    const answered =
      s && !s.closed
        ? await Promise.race([
            s.exists('/').then(
              () => true,
              () => false,
            ),
            sleep(left, false, { ref: false }),
          ])
        : false;
    if (signal.aborted) break;
    if (answered) answeredAt = performance.now();
    const pause = answered ? Math.min(PROBE_EVERY_MS, ms / 2) : PROBE_RETRY_MS;
    await sleep(Math.min(pause, Math.max(0, answeredAt + ms - performance.now())), undefined, { ref: false });
  }
  // the caller finished in time: never settles, so that a race against it is the caller's
  await new Promise<never>(() => undefined);
}
