/**
 * A loopback TCP proxy in front of a ZooKeeper server, to cut a client's
 * connection on purpose (`cut()`) and let it back (`restore()`), or to hold
 * its packets so that requests hang (`freeze()`), or lose (`dropReplies()`)
 * or tear (`tearReplies()`) the server's replies.
 *
 * A freeze is a partition as TCP lives through one: nothing gets through
 * while it lasts, and what was sent meanwhile arrives, in order, once it
 * heals (unless a side gave up on the connection first). Bytes are never
 * lost from a stream that goes on: ZooKeeper's guarantees (a watch fires
 * once, replies come in order) rest on that. Losing replies is a separate
 * fault, and one that must end with a cut.
 *
 * `partition()` is the silent kind, a pulled cable: bytes are dropped both
 * ways and neither side hears of the other closing (a freeze passes the
 * server's close on, which tells a client its session expired). New
 * connections are accepted and go nowhere. `restore()` ends every
 * connection that lived through it, as a peer that gave up answers a
 * reconnected cable with a reset.
 *
 * A packet hook (`start(target, { hook })`) is handed every chunk in place
 * of the forwarding, to pass on, change or hold back: the base of a proxy
 * that reads the wire's framing.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';

/** One proxied connection as a packet hook sees it: it writes on past the hook. */
export interface ProxiedConnection {
  /** Writes bytes on to the server. */
  toServer(data: Buffer): void;
  /** Writes bytes on to the client. */
  toClient(data: Buffer): void;
}

/**
 * Given each chunk a connection carries (`up`: client to server, `down`:
 * server to client) where the proxy would forward it, in order; it forwards
 * what it means to through `conn`. Chunks a freeze holds reach it on
 * `restore()`; chunks torn or cut midway, or dropped, never do.
 */
export type PacketHook = (way: 'up' | 'down', data: Buffer, conn: ProxiedConnection) => void;

export interface TcpProxyOptions {
  hook?: PacketHook;
}

/** One proxied connection, with what a freeze holds back each way. */
interface Pair {
  client: Socket;
  /** What the packet hook is given for this connection. */
  conn: ProxiedConnection;
  /** None for a connection accepted during a partition (it goes nowhere). */
  upstream: Socket | undefined;
  /** Lived through a partition: ended on `restore()`. */
  severed: boolean;
  /** Client to server, held while frozen. */
  up: Buffer[];
  /** Server to client, held while frozen. */
  down: Buffer[];
}

export class TcpProxy {
  private server: Server | undefined;
  private readonly pairs = new Set<Pair>();
  private accepting = true;
  private frozen = false;
  private partitioned = false;
  private holding = false;
  /** The next chunk of replies is torn after `keep` bytes; `done` resolves what `tearReplies` returned. */
  private tearing: { keep: number; done: () => void } | undefined;
  /** The next chunk going `way` is passed on up to `keep` bytes, then its connection cut (`cutMidway`). */
  private midway: { way: 'up' | 'down'; keep: number; done: () => void } | undefined;
  private port = 0;

  private constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
    private readonly hook: PacketHook | undefined,
  ) {}

  /** Starts a proxy to `target` (`host:port`) on a free loopback port. */
  static async start(target: string, options: TcpProxyOptions = {}): Promise<TcpProxy> {
    const [host, port] = target.split(':');
    const proxy = new TcpProxy(host || '127.0.0.1', Number(port), options.hook);
    await proxy.listen();
    return proxy;
  }

  /** The connection string clients should use, `127.0.0.1:<proxy port>`. */
  get connectionString(): string {
    return `127.0.0.1:${this.port}`;
  }

  private listen(): Promise<void> {
    // Half-open sockets: a client that sends and then ends its side (as a
    // four-letter-word probe does) still gets the server's reply.
    this.server = createServer({ allowHalfOpen: true }, (client) => this.accept(client));
    return new Promise((resolve, reject) => {
      this.server?.once('error', reject);
      this.server?.listen(this.port, '127.0.0.1', () => {
        const addr = this.server?.address();
        if (addr && typeof addr === 'object') this.port = addr.port;
        resolve();
      });
    });
  }

  private accept(client: Socket): void {
    if (!this.accepting) {
      client.destroy();
      return;
    }
    if (this.partitioned) {
      const conn = { toServer: () => undefined, toClient: () => undefined };
      const pair: Pair = { client, conn, upstream: undefined, severed: true, up: [], down: [] };
      this.pairs.add(pair);
      client.on('error', () => undefined).on('close', () => this.pairs.delete(pair));
      return;
    }
    const upstream = connect({ host: this.targetHost, port: this.targetPort, allowHalfOpen: true });
    const conn = { toServer: (d: Buffer) => upstream.write(d), toClient: (d: Buffer) => client.write(d) };
    const pair: Pair = { client, conn, upstream, severed: false, up: [], down: [] };
    this.pairs.add(pair);
    const drop = () => {
      if (pair.severed) return; // neither side hears of the other's close
      client.destroy();
      upstream.destroy();
      this.pairs.delete(pair);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.on('end', () => pair.severed || upstream.end());
    upstream.on('end', () => pair.severed || client.end());
    client.on('data', (d: Buffer) => {
      if (pair.severed) return;
      if (this.frozen) pair.up.push(d);
      else if (!this.cutMidChunk(pair, 'up', d)) this.forward(pair, 'up', d);
    });
    upstream.on('data', (d: Buffer) => {
      if (this.holding || pair.severed) return;
      if (!this.frozen && this.cutMidChunk(pair, 'down', d)) return;
      if (this.frozen) {
        pair.down.push(d);
        return;
      }
      const torn = this.tearing;
      if (!torn) {
        this.forward(pair, 'down', d);
        return;
      }
      this.tearing = undefined;
      this.holding = true;
      client.write(d.subarray(0, Math.min(torn.keep, d.length - 1)));
      torn.done();
    });
  }

  private forward(pair: Pair, way: 'up' | 'down', d: Buffer): void {
    if (this.hook) this.hook(way, d, pair.conn);
    else if (way === 'up') pair.upstream?.write(d);
    else pair.client.write(d);
  }

  /** Drops every open connection and refuses new ones until `restore()`. */
  cut(): void {
    this.accepting = false;
    for (const { client, upstream } of this.pairs) {
      client.destroy();
      upstream?.destroy();
    }
    this.pairs.clear();
  }

  /**
   * Holds traffic both ways, keeping the sockets open (a network partition):
   * requests hang, replies and watch events wait. `restore()` delivers what
   * was held, in order, as TCP does once a partition heals.
   */
  freeze(): void {
    this.frozen = true;
  }

  /**
   * A silent partition (a pulled cable): every byte is dropped both ways,
   * and a side that closes its end is not heard by the other (the server
   * closing an expired session's connection included). Connections opened
   * meanwhile are accepted and go nowhere. A client notices only by its own
   * timeouts. `restore()` ends every connection that lived through it.
   */
  partition(): void {
    this.partitioned = true;
    for (const pair of this.pairs) pair.severed = true;
  }

  /**
   * Forwards requests to the server but drops its replies: requests are
   * applied while the client hears nothing (the reply lost in flight).
   */
  dropReplies(): void {
    this.holding = true;
  }

  /**
   * Like `dropReplies()`, but the next chunk of replies first reaches the
   * client in part, its first `keep` bytes (at most all but its last byte):
   * a reply torn in flight, as when a connection dies in the middle of one.
   * Resolves once it is torn.
   */
  tearReplies(keep = 8): Promise<void> {
    return new Promise((resolve) => {
      this.tearing = { keep, done: resolve };
    });
  }

  /**
   * Passes on the first `keep` bytes (at most all but the last) of the next
   * chunk going `way` (`up`: requests, `down`: replies), then cuts that
   * connection both ways, as when a connection dies while a packet is in
   * flight. Later connections go through as usual. Resolves once cut.
   */
  cutMidway(way: 'up' | 'down', keep: number): Promise<void> {
    return new Promise((resolve) => {
      this.midway = { way, keep, done: resolve };
    });
  }

  private cutMidChunk(pair: Pair, way: 'up' | 'down', d: Buffer): boolean {
    const midway = this.midway;
    if (midway?.way !== way) return false;
    this.midway = undefined;
    pair.severed = true; // nothing more passes, either way
    const keep = Math.max(0, Math.min(midway.keep, d.length - 1));
    const to = way === 'up' ? pair.upstream : pair.client;
    const end = () => {
      pair.client.destroy();
      pair.upstream?.destroy();
      this.pairs.delete(pair);
      midway.done();
    };
    if (keep > 0 && to) to.write(d.subarray(0, keep), end);
    else end();
    return true;
  }

  /** Accepts connections (and forwards traffic) again; ends the connections a partition severed. */
  restore(): void {
    this.accepting = true;
    this.frozen = false;
    this.partitioned = false;
    for (const pair of this.pairs) {
      if (pair.severed) {
        this.pairs.delete(pair);
        pair.client.destroy();
        pair.upstream?.destroy();
        continue;
      }
      for (const d of pair.up.splice(0)) this.forward(pair, 'up', d);
      for (const d of pair.down.splice(0)) this.forward(pair, 'down', d);
    }
    this.holding = false;
    this.tearing = undefined;
    this.midway = undefined;
  }

  /** Number of connections currently proxied. */
  get connections(): number {
    return this.pairs.size;
  }

  async stop(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
