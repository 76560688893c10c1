/**
 * A loopback proxy in front of ZooKeeper that understands the wire framing,
 * to inject a fault at ONE chosen request: cut the connection just before it
 * reaches the server, lose its reply after the server applied it, hold its
 * reply (and everything behind it) back for a while, or rewrite the error
 * code its reply carries.
 *
 * Requests are chosen by op code and by the bytes they carry (a path or a job
 * id), not by who sends them or in which order, so a test keeps its meaning
 * when the code above is rebuilt. Each fault fires once.
 *
 * Framing: every packet is a 4-byte length then the body. The first packet
 * each way is the session handshake; after it a request starts with
 * (xid, op code) and a reply with (xid, zxid, error), the reply's xid being
 * its request's. The bytes come from TcpProxy's packet hook, which this
 * proxy reads packet by packet.
 */
import { type ProxiedConnection, TcpProxy } from '@zkq/testing';

/** ZooKeeper op codes (org.apache.zookeeper.ZooDefs.OpCode). */
export const OP = {
  create: 1,
  delete: 2,
  exists: 3,
  getData: 4,
  setData: 5,
  getChildren: 8,
  sync: 9,
  getChildren2: 12,
  check: 13,
  multi: 14,
  create2: 15,
  multiRead: 22,
  auth: 100,
} as const;

/** Op codes that change nothing on the server. */
export const READ_OPS: readonly number[] = [OP.exists, OP.getData, OP.getChildren, OP.getChildren2, OP.multiRead];

/** Op codes that write. */
export const WRITE_OPS: readonly number[] = [OP.create, OP.delete, OP.setData, OP.multi, OP.create2];

/** One request as it goes to the server. */
export interface WireRequest {
  xid: number;
  op: number;
  /** The whole packet, length prefix included (paths and node data are in it as bytes). */
  packet: Buffer;
}

/** A request matcher: `ops` (any when omitted) and every string of `mentions` in the packet. */
export function request(ops: number | readonly number[] | undefined, ...mentions: string[]) {
  const wanted = ops === undefined ? undefined : ([] as number[]).concat(ops);
  const needles = mentions.map((m) => Buffer.from(m));
  return (r: WireRequest): boolean =>
    (wanted === undefined || wanted.includes(r.op)) && needles.every((n) => r.packet.includes(n));
}

export interface Fault {
  /** Resolves when the fault has been applied. */
  readonly fired: Promise<void>;
  /** Resolves when the proxy behaves normally again (connections accepted, held replies let through). */
  readonly done: Promise<void>;
  /** True once the matching request was seen (a fault acting on its reply applies when the reply comes). */
  readonly hasFired: boolean;
}

type Action =
  | { kind: 'cut'; refuseMs: number }
  | { kind: 'loseReply'; until: Promise<unknown> | undefined }
  | { kind: 'delayReply'; ms: number }
  | { kind: 'rewriteError'; code: number };

interface Rule {
  match: (r: WireRequest) => boolean;
  action: Action;
  fault: Fault & { hasFired: boolean };
  fire: () => void;
  finish: () => void;
}

/** What this proxy keeps of one connection: its framing each way, and the replies it acts on. */
interface Pipe {
  conn: ProxiedConnection;
  inbound: Buffer;
  outbound: Buffer;
  handshakeSent: boolean;
  handshakeAnswered: boolean;
  /** Requests whose reply a rule acts on, by xid. */
  watched: Map<number, Rule>;
  /** Replies held back (delayReply) until released, in order. */
  held: Buffer[] | undefined;
  /** Its handshake was swallowed (swallowHandshakes): nothing it sends goes on. */
  swallowed?: boolean;
}

export class FaultProxy {
  private proxy!: TcpProxy;
  private readonly pipes = new WeakMap<ProxiedConnection, Pipe>();
  private readonly rules: Rule[] = [];
  /** Cuts whose refusal of new connections lasts still. */
  private refusals = 0;
  /** Handshakes still to swallow (swallowHandshakes). */
  private handshakesToSwallow = 0;

  private constructor() {}

  /** Starts a proxy to `target` (`host:port`; its first server when it names several) on a free loopback port. */
  static async start(target: string): Promise<FaultProxy> {
    const fault = new FaultProxy();
    fault.proxy = await TcpProxy.start(target.split(',')[0] ?? '', {
      hook: (way, data, conn) =>
        way === 'up' ? fault.fromClient(fault.pipe(conn), data) : fault.fromServer(fault.pipe(conn), data),
    });
    return fault;
  }

  /** The connection string clients should use. */
  get connectionString(): string {
    return this.proxy.connectionString;
  }

  /** Drops the next matching request unsent, cuts every connection and refuses new ones for `refuseMs`. */
  cutBefore(match: (r: WireRequest) => boolean, refuseMs: number): Fault {
    return this.addRule(match, { kind: 'cut', refuseMs });
  }

  /**
   * Sends the next matching request; when the server's reply comes, drops it
   * and cuts every connection (the request applied, the client never hears
   * so). New connections are refused until `until` settles, if given.
   */
  loseReply(match: (r: WireRequest) => boolean, until?: Promise<unknown>): Fault {
    return this.addRule(match, { kind: 'loseReply', until });
  }

  /** Sends the next matching request and holds its reply, and every later one on that connection, for `ms`. */
  delayReply(match: (r: WireRequest) => boolean, ms: number): Fault {
    return this.addRule(match, { kind: 'delayReply', ms });
  }

  /**
   * Sends the next matching request and puts `code` in its reply's error
   * field (the reply's body is passed on as the server sent it): how a
   * server answers with a code the client may not know.
   */
  rewriteError(match: (r: WireRequest) => boolean, code: number): Fault {
    return this.addRule(match, { kind: 'rewriteError', code });
  }

  /**
   * Holds back the handshake of the next `count` connections for good and
   * keeps them open: a connection accepted with nothing behind it (a proxy
   * whose server is down or still starting), which the client hears nothing
   * on. Later connections go through.
   */
  swallowHandshakes(count: number): void {
    this.handshakesToSwallow += count;
  }

  /** Ends every open connection (the clients reconnect at once). */
  dropConnections(): void {
    this.proxy.cut();
    if (this.refusals === 0) this.proxy.restore();
  }

  stop(): Promise<void> {
    return this.proxy.stop();
  }

  private addRule(match: Rule['match'], action: Action): Fault {
    let fire!: () => void;
    let finish!: () => void;
    const fired = new Promise<void>((r) => {
      fire = r;
    });
    const done = new Promise<void>((r) => {
      finish = r;
    });
    const fault = { fired, done, hasFired: false };
    const rule: Rule = {
      match,
      action,
      fault,
      fire: () => {
        fault.hasFired = true;
        fire();
      },
      finish,
    };
    this.rules.push(rule);
    return fault;
  }

  private pipe(conn: ProxiedConnection): Pipe {
    let pipe = this.pipes.get(conn);
    if (!pipe) {
      pipe = {
        conn,
        inbound: Buffer.alloc(0),
        outbound: Buffer.alloc(0),
        handshakeSent: false,
        handshakeAnswered: false,
        watched: new Map(),
        held: undefined,
      };
      this.pipes.set(conn, pipe);
    }
    return pipe;
  }

  /** Cuts every connection; new ones are refused until `until` settles (and no other refusal lasts), then `rule` is done. */
  private cutAll(rule: Rule, until: Promise<unknown> | undefined): void {
    this.proxy.cut();
    if (!until) {
      if (this.refusals === 0) this.proxy.restore();
      rule.finish();
      return;
    }
    this.refusals++;
    const reopen = () => {
      if (--this.refusals === 0) this.proxy.restore();
      rule.finish();
    };
    void until.then(reopen, reopen);
  }

  private fromClient(pipe: Pipe, data: Buffer): void {
    pipe.inbound = Buffer.concat([pipe.inbound, data]);
    for (;;) {
      const packet = takePacket(pipe, 'inbound');
      if (!packet) return;
      if (pipe.swallowed) return;
      if (!pipe.handshakeSent) {
        pipe.handshakeSent = true;
        if (this.handshakesToSwallow > 0) {
          this.handshakesToSwallow--;
          pipe.swallowed = true;
          pipe.inbound = Buffer.alloc(0);
          return;
        }
        pipe.conn.toServer(packet);
        continue;
      }
      const req: WireRequest = { xid: packet.readInt32BE(4), op: packet.readInt32BE(8), packet };
      const rule = this.rules.find((r) => !r.fault.hasFired && r.match(req));
      if (rule?.action.kind === 'cut') {
        rule.fire();
        this.cutAll(rule, new Promise((r) => setTimeout(r, (rule.action as { refuseMs: number }).refuseMs)));
        return;
      }
      if (rule) {
        // Claimed now, so that no other request fires it; applied at the reply.
        rule.fault.hasFired = true;
        pipe.watched.set(req.xid, rule);
      }
      pipe.conn.toServer(packet);
    }
  }

  private fromServer(pipe: Pipe, data: Buffer): void {
    pipe.outbound = Buffer.concat([pipe.outbound, data]);
    for (;;) {
      const packet = takePacket(pipe, 'outbound');
      if (!packet) return;
      if (!pipe.handshakeAnswered) {
        pipe.handshakeAnswered = true;
        this.toClient(pipe, packet);
        continue;
      }
      const xid = packet.readInt32BE(4);
      const rule = pipe.watched.get(xid);
      pipe.watched.delete(xid);
      if (rule?.action.kind === 'loseReply') {
        rule.fire();
        this.cutAll(rule, rule.action.until);
        return;
      }
      if (rule?.action.kind === 'rewriteError') {
        const rewritten = Buffer.from(packet);
        rewritten.writeInt32BE(rule.action.code, 16); // length, xid, zxid (8), then err
        rule.fire();
        rule.finish();
        this.toClient(pipe, rewritten);
        continue;
      }
      if (rule?.action.kind === 'delayReply') {
        rule.fire();
        pipe.held ??= [];
        setTimeout(() => {
          const held = pipe.held ?? [];
          pipe.held = undefined;
          for (const p of held) pipe.conn.toClient(p);
          rule.finish();
        }, rule.action.ms);
      }
      this.toClient(pipe, packet);
    }
  }

  private toClient(pipe: Pipe, packet: Buffer): void {
    if (pipe.held) pipe.held.push(packet);
    else pipe.conn.toClient(packet);
  }
}

/** Takes one whole packet (length prefix included) off the front of a pipe's buffer, if there is one. */
function takePacket(pipe: Pipe, side: 'inbound' | 'outbound'): Buffer | undefined {
  const buf = pipe[side];
  if (buf.length < 4) return undefined;
  const size = 4 + buf.readInt32BE(0);
  if (buf.length < size) return undefined;
  pipe[side] = buf.subarray(size);
  return buf.subarray(0, size);
}
