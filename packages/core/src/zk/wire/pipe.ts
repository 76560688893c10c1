/**
 * The request pipe: fewer writes, copies and wrappers per request on one
 * client of the checked release.
 */
import type { WireClient } from './convert.js';
import { sendDirectly } from './direct.js';
import { frameReplies } from './frames.js';
import {
  type ManagerLike,
  type PacketLike,
  PIPE_OP,
  PIPE_OP_MORE,
  type SocketLike,
  STATE,
  TUNED,
} from './internals.js';
import { checkPipe } from './pipe-check.js';
import { saslOf } from './sasl.js';

// Per request, the wire client writes the request with a socket.write of its
// own the moment it is queued, copies all unparsed input again (Buffer.concat)
// for every reply it parses, and runs each single request through an
// async.whilst retry wrapper. `tuneClient` changes that on one client of the
// checked release, before it connects (every other client is left alone):
//
// - writes: a request is serialized when queued (so a bad argument still
//   throws to its caller), and the requests queued in one tick go out in the
//   next one (process.nextTick) as one socket write, in queue order, each
//   given its xid as the manager gives it (patched into bytes 4-7, where the
//   request header's xid is). The manager's own direct sends (after the connect
//   reply: auth, set-watches, then the queue; on 'drain') still go at once;
//   auth and set-watches packets a reconnection queues go before the requests
//   that waited for it;
// - reads: the input is cut into packets by offset and each packet handed,
//   whole and uncopied, to the manager's own handler (which then neither
//   buffers nor recurses); only a packet split across chunks is joined, once,
//   when complete. Bytes left by a closed socket are dropped, not put in front
//   of the next connection's. A packet that does not parse drops the
//   connection instead of throwing from the data handler (handleWhole);
// - create, remove, setData, getData, exists and getChildren queue their
//   request directly: with `retries: 0` (all the session uses) the wrapper
//   sends once and passes the reply on, and the session has its own timeouts
//   and retries.

/** Bytes of requests one socket write gathers at most. */
const WRITE_BATCH_BYTES = 256 * 1024;

/**
 * Installs the request pipe on `client` (not yet connected). Returns what
 * differs from the checked wire client instead, leaving the client as it is
 * (it works, only slower), when the installed one is not that release.
 */
export function tuneClient(client: WireClient): string[] {
  const checked = checkPipe(client);
  if (Array.isArray(checked)) return checked;
  const manager = (client as unknown as { connectionManager?: ManagerLike }).connectionManager;
  if (!manager) return ['the client has no connection manager'];
  const marks = manager as unknown as Record<symbol, unknown>;
  if (marks[TUNED]) return [];
  marks[TUNED] = true;
  coalesceWrites(manager);
  frameReplies(manager);
  if ((client as unknown as { options?: { retries?: unknown } }).options?.retries === 0) {
    sendDirectly(client, manager, checked);
  }
  return [];
}

function coalesceWrites(m: ManagerLike): void {
  let scheduled = false;
  const sendScheduled = () => {
    scheduled = false;
    m.onPacketQueueReadable();
  };
  m.packetQueue.removeAllListeners('readable'); // the manager's own: it writes each request at once
  m.packetQueue.on('readable', () => {
    const queued = m.packetQueue.queue;
    const packet = queued[queued.length - 1];
    if (packet && m.state !== STATE.CONNECTED && m.state !== STATE.CONNECTED_READ_ONLY && isSessionSetup(packet)) {
      // A reconnection queues its auth and set-watches packets behind the requests that waited for
      // it: those would reach the server on a connection with no identity yet (NoAuth on nodes of
      // the creator's ACL). They go first, in the order queued.
      queued.pop();
      let at = 0;
      while (at < queued.length && isSessionSetup(queued[at] as PacketLike)) at++;
      queued.splice(at, 0, packet);
    }
    if (packet && !packet[TUNED]) {
      try {
        packet[TUNED] = packet.request.toBuffer();
      } catch (err) {
        queued.pop(); // as if never queued: the caller gets the error, no reply is awaited
        throw err;
      }
    }
    if (!scheduled) {
      scheduled = true;
      process.nextTick(sendScheduled);
    }
  });
  m.onPacketQueueReadable = () => sendQueued(m);
}

/** The manager's onPacketQueueReadable, sending everything queued in one write. */
function sendQueued(m: ManagerLike): void {
  if (m.state !== STATE.CONNECTED && m.state !== STATE.CONNECTED_READ_ONLY && m.state !== STATE.CLOSING) return;
  // nothing but the SASL exchange goes out before it completes (a server enforcing it would close the connection)
  if (m.state !== STATE.CLOSING && saslOf(m)?.gated) return;
  let chunks: Buffer[] = [];
  let bytes = 0;
  for (let packet = m.packetQueue.shift(); packet !== undefined; packet = m.packetQueue.shift()) {
    const header = packet.request.header;
    const serialized = packet[TUNED];
    if (header !== null && header.type !== PIPE_OP.PING && header.type !== PIPE_OP_MORE.AUTH) {
      header.xid = m.xid;
      m.xid += 1;
      m.pendingQueue.push(packet);
      if (serialized) serialized.writeInt32BE(header.xid, 4);
    }
    const chunk = serialized ?? packet.request.toBuffer();
    packet[TUNED] = undefined;
    chunks.push(chunk);
    bytes += chunk.length;
    if (header?.type === PIPE_OP_MORE.CLOSE_SESSION) break; // the last packet sent
    if (bytes >= WRITE_BATCH_BYTES) {
      // Back pressure, as the manager does it: 'drain' calls this again.
      if (!writeAll(m, chunks, bytes)) return;
      chunks = [];
      bytes = 0;
    }
  }
  if (chunks.length > 0) writeAll(m, chunks, bytes);
}

/** An auth or set-watches packet: what a connection must send before any request. */
function isSessionSetup(packet: PacketLike): boolean {
  const type = packet.request.header?.type;
  return type === PIPE_OP_MORE.AUTH || type === PIPE_OP_MORE.SET_WATCHES;
}

function writeAll(m: ManagerLike, chunks: Buffer[], bytes: number): boolean {
  const socket = m.socket as SocketLike;
  return socket.write(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, bytes));
}
