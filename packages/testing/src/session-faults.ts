/**
 * Expiring a client's session on purpose.
 *
 * ZooKeeper offers no "expire" call; the measured way is to open a second
 * connection with the first session's id and password, then close it: the
 * server ends the session, and the first client learns it is expired the
 * next time it talks to the server. This needs the raw wire client, which the
 * library's session layer deliberately does not expose: fault injection is
 * the one place outside it that impersonates a session.
 */
import zookeeper from 'node-zookeeper-client';

/** A session's identity, as the session layer reports it (`session.credentials()`). */
export interface SessionCredentials {
  sessionId: Buffer;
  password: Buffer;
}

/** Ends the session named by `credentials` on the server at `connectionString`. */
export function expireSession(
  connectionString: string,
  credentials: SessionCredentials,
  timeoutMs = 10_000,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const client = zookeeper.createClient(connectionString, {
      sessionTimeout: 10_000,
      spinDelay: 100,
      retries: 0,
      sessionId: credentials.sessionId,
      sessionPassword: credentials.password,
    } as zookeeper.Option);
    const timer = setTimeout(() => {
      client.close();
      reject(new Error(`expireSession: no connection within ${timeoutMs} ms`));
    }, timeoutMs);
    client.once('connected', () => {
      clearTimeout(timer);
      client.close();
      resolve();
    });
    client.once('expired', () => {
      clearTimeout(timer);
      client.close();
      resolve(); // already expired: the goal holds
    });
    client.connect();
  });
}
