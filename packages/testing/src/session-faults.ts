/**
 * Expiring a client's session on purpose.
 *
 * ZooKeeper offers no "expire" call. The way that works is to impersonate the
 * session: connect with its id and password, then close it. Done naively
 * (connect, wait for the reply, close) it races the real client, which
 * reconnects the moment the server hands its session to the impostor and can
 * take it back before the close arrives. So the impostor here speaks the
 * wire protocol itself and writes the connect request and the closeSession
 * request back to back; then it checks: a further connect with the same
 * credentials must be refused as expired (timeout 0), else it tries again.
 */
import { connect, type Socket } from 'node:net';

/** A session's identity, as the session layer reports it (`session.credentials()`). */
export interface SessionCredentials {
  sessionId: Buffer;
  password: Buffer;
}

const CLOSE_SESSION_OP = -11;

function connectRequest(credentials: SessionCredentials): Buffer {
  const body = Buffer.alloc(4 + 8 + 4 + 8 + 4 + 16 + 1);
  let o = 0;
  o = body.writeInt32BE(0, o); // protocol version
  o = body.writeBigInt64BE(0n, o); // last zxid seen
  o = body.writeInt32BE(10_000, o); // requested timeout
  o += credentials.sessionId.copy(body, o, 0, 8);
  o = body.writeInt32BE(16, o);
  o += credentials.password.copy(body, o, 0, 16);
  body.writeUInt8(0, o); // not read-only
  return frame(body);
}

function closeRequest(): Buffer {
  const body = Buffer.alloc(8);
  body.writeInt32BE(1, 0); // xid
  body.writeInt32BE(CLOSE_SESSION_OP, 4);
  return frame(body);
}

function frame(body: Buffer): Buffer {
  const len = Buffer.alloc(4);
  len.writeInt32BE(body.length);
  return Buffer.concat([len, body]);
}

function hostPort(connectionString: string): { host: string; port: number } {
  const first = (connectionString.split(',')[0] ?? '').split('/')[0] ?? '';
  const [host, port] = first.split(':');
  return { host: host || '127.0.0.1', port: Number(port) };
}

/**
 * Connects as the session; with `close`, ends it in the same breath.
 * Resolves with the session timeout the server granted (0: expired).
 */
function impersonate(connectionString: string, credentials: SessionCredentials, close: boolean): Promise<number> {
  return new Promise((resolve, reject) => {
    const sock: Socket = connect(hostPort(connectionString));
    let data = Buffer.alloc(0);
    let granted: number | undefined;
    sock.setTimeout(5000, () => sock.destroy(new Error('no reply from ZooKeeper')));
    sock.on('connect', () =>
      sock.write(close ? Buffer.concat([connectRequest(credentials), closeRequest()]) : connectRequest(credentials)),
    );
    sock.on('data', (chunk) => {
      data = Buffer.concat([data, chunk]);
      if (granted === undefined && data.length >= 12) {
        granted = data.readInt32BE(8); // length, protocol version, timeout
        if (!close) sock.end();
      }
    });
    sock.on('error', (err) => (granted === undefined ? reject(err) : resolve(granted)));
    sock.on('close', () =>
      granted === undefined ? reject(new Error('connection closed without a reply')) : resolve(granted),
    );
  });
}

/** Ends the session named by `credentials` on the server at `connectionString`, and checks that it is gone. */
export async function expireSession(
  connectionString: string,
  credentials: SessionCredentials,
  timeoutMs = 10_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    await impersonate(connectionString, credentials, true).catch(() => undefined);
    // A session that is gone is refused with a zero timeout. A live one would be
    // re-attached to this probe, which then lets go of it right away.
    if ((await impersonate(connectionString, credentials, false).catch(() => -1)) === 0) return;
  }
  throw new Error(`expireSession: session ${credentials.sessionId.toString('hex')} still alive after ${timeoutMs} ms`);
}
