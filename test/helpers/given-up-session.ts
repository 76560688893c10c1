/**
 * A recipe's session given up by its client while the server still holds its
 * nodes: the session goes through a TcpProxy of its own that loses every
 * reply from a chosen request on. The server keeps the session while it hears
 * the client try to reconnect; a while before the client gives the session up,
 * the link dies both ways, so that its close does not reach the server either:
 * the nodes of the session given up outlive it into its new one, until the
 * server expires it.
 */
import { sharedZooKeeper, TcpProxy } from '@zkq/testing';
import { testSession } from './zk.js';

const SESSION_TIMEOUT_MS = 4000;

type Read = 'exists' | 'getData' | 'getChildren';
type ReadMethod = (path: string, ...rest: unknown[]) => Promise<unknown>;

/**
 * A session through its own proxy, quick to retry and to give up a request, and
 * an `observer` on a plain session of the same namespace.
 */
export async function sessionToGiveUp(t: { after(fn: () => unknown): void; name?: string }) {
  const proxy = await TcpProxy.start(await sharedZooKeeper());
  t.after(() => proxy.stop());
  const session = await testSession(t, {
    connectionString: proxy.connectionString,
    sessionTimeout: SESSION_TIMEOUT_MS,
    requestTimeout: 300,
    retry: { maxAttempts: 1000, baseDelayMs: 20, maxDelayMs: 200, deadlineMs: 60_000 },
  });
  const observer = await testSession(t, { namespace: session.namespace });
  /** Once suspended, the link is cut both ways a while before the session is given up; restored once it is. */
  const cutBeforeGivenUp = () => {
    session.once('suspended', () => setTimeout(() => proxy.partition(), (SESSION_TIMEOUT_MS * 3) / 4));
    session.once('lost', () => proxy.restore());
  };
  return {
    proxy,
    session,
    observer,
    /** Every reply lost from now on, then the link. */
    loseRepliesNow(): void {
      proxy.dropReplies();
      cutBeforeGivenUp();
    },
    /** Every reply lost from the first `method` request for `path` on (that one included), then the link. */
    loseRepliesFrom(method: Read, path: string): void {
      const methods = session as unknown as Record<Read, ReadMethod>;
      const original = methods[method].bind(session);
      let sent = false;
      methods[method] = (p, ...rest) => {
        if (p === path && !sent) {
          sent = true;
          proxy.dropReplies();
        }
        return original(p, ...rest);
      };
      cutBeforeGivenUp();
    },
  };
}
