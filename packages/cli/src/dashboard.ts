/**
 * bull-board over zkq's queues: BullMQ's own `Queue` on the ZooKeeper
 * backend, shown by bull-board's `BullMQAdapter` as it is. Where bull-board
 * would ask Redis about itself, a subclass of the adapter answers with
 * ZooKeeper's figures (`mntr`/`srvr`), the queue's leader and its live
 * workers; `<base>/zookeeper.json` gives all of them, linked from the board,
 * and bull-board's messages name ZooKeeper (dashboard-wording.ts). Looking
 * creates nothing: no namespace node, no queue, no meta write. Every request
 * passes dashboard-guard.ts first (host names, credentials, same-origin JSON
 * writes). An identity the namespace's ACL does not let list its queues
 * (another tenant's namespace) gets a board that answers every request with
 * 403 and one line saying so, until a look finds it allowed. Used by
 * `zkq dashboard` and mountable in any Express app.
 */
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import { createZooKeeperBackend, type ZooKeeperConnectionOptions } from '@zkq/bullmq';
import { DEFAULT_PREFIX, NoAuthError, type Session } from '@zkq/core';
import { type Queue, withBackend } from 'bullmq';
import express, { type ErrorRequestHandler, type Request, type Response, type Router } from 'express';
import { currentLeader, liveWorkers, type WorkerInfo } from './commands/inspect.js';
import { type DashboardAuth, dashboardGuard } from './dashboard-guard.js';
import { NamespaceReader } from './dashboard-namespace.js';
import { bullBoardUiPath, wordingRouter } from './dashboard-wording.js';
import { type ZooKeeperServerInfo, zooKeeperInfo } from './zookeeper-info.js';

/** How often the board looks for new and deleted queues. */
export const DEFAULT_DISCOVERY_MS = 10_000;
/** How long ZooKeeper's figures are reused between polls (one `mntr` for many queues). */
const FACTS_TTL_MS = 2000;

export interface ZooKeeperDashboardOptions {
  /** As for BullMQ's classes on the ZooKeeper backend; `namespace` defaults to `zkq`. */
  connection: ZooKeeperConnectionOptions;
  /**
   * The queues to show; default: every queue under the namespace. Only queues
   * that exist are shown (the board creates none): one made later appears at
   * the next look, one deleted leaves the board.
   */
  queues?: string[];
  /** The path the router is mounted at (bull-board's pages link from there). Default `/`. */
  basePath?: string;
  /** No retry, remove, pause...: a board to look at only (every write is refused, not just hidden). */
  readOnly?: boolean;
  /**
   * Host names (no port) the board answers to besides `localhost`, `127.0.0.1` and `[::1]`:
   * the names it is reached by through a proxy or on another interface. `*` accepts any
   * (only behind a proxy that checks `Host` itself). Anything else is refused, which stops
   * DNS-rebinding pages.
   */
  allowedHosts?: string[];
  /** Credentials every request must carry: HTTP Basic or a bearer token. Default: none. */
  auth?: DashboardAuth;
  /** How often to look for new and deleted queues, ms. */
  discoveryMs?: number;
}

export interface ZooKeeperDashboard {
  /** Mount it at `basePath`: `app.use(basePath, dashboard.router)`. */
  router: Router;
  /** The queues shown now. */
  queues(): string[];
  /** Why the namespace cannot be shown (its ACL refuses this identity), or undefined when it can. */
  refusal(): string | undefined;
  /** Stops looking for queues and closes every Queue and the session. */
  close(): Promise<void>;
}

/** The ensemble's members and modes, one line: `127.0.0.1:2181 leader, 127.0.0.1:2182 follower`. */
export function membersLine(info: ZooKeeperServerInfo): string {
  return info.members.map((m) => `${m.server} ${m.mode}`).join(', ');
}

/** What the board shows about ZooKeeper, fetched at most once per FACTS_TTL_MS. */
export class ZooKeeperFacts {
  private serverInfo: { at: number; value: Promise<ZooKeeperServerInfo | undefined> } | undefined;

  constructor(
    readonly connectionString: string,
    readonly session: Session,
  ) {}

  server(): Promise<ZooKeeperServerInfo | undefined> {
    const now = Date.now();
    if (!this.serverInfo || now - this.serverInfo.at > FACTS_TTL_MS) {
      this.serverInfo = { at: now, value: zooKeeperInfo(this.connectionString) };
    }
    return this.serverInfo.value;
  }

  async queue(name: string): Promise<{ leader: string | undefined; workers: WorkerInfo[] }> {
    const [leader, workers] = await Promise.all([currentLeader(this.session, name), liveWorkers(this.session, name)]);
    return { leader, workers };
  }
}

/**
 * BullMQAdapter for a queue on ZooKeeper: bull-board's server panel shows
 * ZooKeeper's figures, its workers list is zkq's live workers, and the queue's
 * description names its leader, its workers and the server's znode count.
 */
export class ZooKeeperBullMQAdapter extends BullMQAdapter {
  private zkDescription = '';

  constructor(
    queue: Queue,
    private readonly facts: ZooKeeperFacts,
    options: { readOnlyMode?: boolean } = {},
  ) {
    super(queue, { readOnlyMode: options.readOnlyMode ?? false, allowRetries: true });
  }

  override async getRedisInfo(): Promise<string | null> {
    return null; // not Redis: bull-board then asks getDatastoreStats
  }

  override async getDatastoreStats(): Promise<Awaited<ReturnType<BullMQAdapter['getDatastoreStats']>>> {
    const info = await this.facts.server();
    if (!info) return null;
    // bull-board's fields are Redis's: `os` (shown as "Server") carries where the server is and
    // its znodes, `blocked` its outstanding requests; no memory (mntr reports no JVM figures).
    return {
      version: `ZooKeeper ${info.version}`,
      mode: info.mode === 'standalone' ? 'standalone' : 'cluster',
      port: Number(info.server.split(':').pop()),
      os: `${info.server}, ${info.znodeCount} znodes, ${info.watchCount ?? '?'} watches; ${membersLine(info)}`,
      uptime: Math.round((info.uptimeMs ?? 0) / 1000),
      clients: { connected: info.connections, blocked: info.outstandingRequests },
    };
  }

  override async getWorkers(): Promise<Awaited<ReturnType<BullMQAdapter['getWorkers']>>> {
    const { workers } = await this.facts.queue(this.getQueueName());
    const now = Date.now();
    return workers.map((w) => ({
      id: w.id,
      name: w.id,
      addr: `${w.host ?? '?'}${w.pid !== undefined ? ` pid ${w.pid}` : ''}`,
      age: w.startedAt ? Math.max(0, Math.round((now - w.startedAt) / 1000)) : 0,
    }));
  }

  /** Counts, and the description refreshed with them (bull-board reads it right after). */
  override async getJobCounts(): Promise<Awaited<ReturnType<BullMQAdapter['getJobCounts']>>> {
    const [counts] = await Promise.all([super.getJobCounts(), this.refreshDescription()]);
    return counts;
  }

  override getDescription(): string {
    return this.zkDescription;
  }

  private async refreshDescription(): Promise<void> {
    try {
      const [{ leader, workers }, server] = await Promise.all([
        this.facts.queue(this.getQueueName()),
        this.facts.server(),
      ]);
      const n = workers.length;
      this.zkDescription = [
        `leader: ${leader ?? 'none'}`,
        `${n} live worker${n === 1 ? '' : 's'}`,
        server
          ? `ZooKeeper ${server.version} ${server.mode}, ${server.znodeCount} znodes; ${membersLine(server)}`
          : 'ZooKeeper figures unavailable',
      ].join(' · ');
    } catch {
      // keep the last description: the counts still show
    }
  }
}

/** Builds the board. Resolves once the queues are listed; mount `router` at `basePath`. */
export async function createZooKeeperDashboard(opts: ZooKeeperDashboardOptions): Promise<ZooKeeperDashboard> {
  const { namespace, ...connection } = opts.connection;
  const prefix = (namespace ?? DEFAULT_PREFIX).replace(/^\/+/, '') || DEFAULT_PREFIX;
  const basePath = `/${(opts.basePath ?? '/').replace(/^\/+|\/+$/g, '')}`;
  const wanted = opts.queues ? new Set(opts.queues) : undefined;
  const space = new NamespaceReader(connection, prefix);
  await space.start();
  let facts: ZooKeeperFacts | undefined;
  const factsIn = (session: Session) => {
    facts ??= new ZooKeeperFacts(connection.connectionString, session);
    return facts;
  };
  const { Queue: ZkQueue } = withBackend(createZooKeeperBackend);
  const open = new Map<string, { queue: Queue; adapter: ZooKeeperBullMQAdapter }>();
  /** The BullMQ Queues of queues that left the board, still closing. */
  const closing = new Set<Promise<void>>();

  const uiBasePath = bullBoardUiPath();
  const serverAdapter = new ExpressAdapter();
  serverAdapter.setBasePath(basePath === '/' ? '' : basePath);
  const board = createBullBoard({
    queues: [],
    serverAdapter,
    options: {
      uiBasePath,
      uiConfig: {
        boardTitle: 'zkq',
        miscLinks: [{ text: 'ZooKeeper', url: `${basePath === '/' ? '' : basePath}/zookeeper.json` }],
      },
    },
  });

  const add = (name: string, session: Session) => {
    // skipMetasUpdate: BullMQ's Queue would otherwise write its version into the queue's settings
    const queue = new ZkQueue(name, {
      connection: { ...connection, namespace: prefix },
      skipMetasUpdate: true,
    }) as unknown as Queue;
    const adapter = new ZooKeeperBullMQAdapter(queue, factsIn(session), { readOnlyMode: opts.readOnly ?? false });
    open.set(name, { queue, adapter });
    board.addQueue(adapter);
  };
  const drop = (name: string) => {
    const shown = open.get(name);
    if (!shown) return;
    open.delete(name);
    board.removeQueue(shown.adapter);
    const closed = shown.queue.close().catch(() => {});
    closing.add(closed);
    void closed.finally(() => closing.delete(closed));
  };
  let refusal: string | undefined;
  const refused = () =>
    `not authorized: the ACL of /${prefix} does not let this dashboard's ZooKeeper identity list its queues (check the identity it connects with: digest auth, SASL user or TLS client certificate)`;
  // Only queues that exist get a BullMQ Queue: its backend would create a missing one.
  const discover = async () => {
    const found = await space.queues().then(
      (f) => {
        refusal = undefined;
        return f;
      },
      (err) => {
        if (!(err instanceof NoAuthError)) throw err;
        refusal = refused();
        return undefined;
      },
    );
    const names = new Set((found?.names ?? []).filter((n) => !wanted || wanted.has(n)));
    for (const name of [...open.keys()]) if (!names.has(name)) drop(name);
    if (found) for (const name of names) if (!open.has(name)) add(name, found.session);
  };

  try {
    await discover();
  } catch (err) {
    await space.close();
    throw err;
  }
  // One look at a time: a slow one overlapping the next could drop a queue the next just added.
  let looking: Promise<void> | undefined;
  const look = () => {
    looking ??= discover()
      .catch(() => {}) // the next look tries again
      .finally(() => {
        looking = undefined;
      });
  };
  const timer = setInterval(look, opts.discoveryMs ?? DEFAULT_DISCOVERY_MS);
  timer.unref();

  const router = express.Router();
  // first: no page of another site, and no rebound host name, reaches anything below
  router.use(dashboardGuard({ allowedHosts: opts.allowedHosts, auth: opts.auth, readOnly: opts.readOnly }));
  router.use((req, res, next) => {
    if (refusal === undefined) return next();
    sendError(req, res, 403, refusal);
  });
  router.get('/zookeeper.json', async (_req, res, next) => {
    try {
      const server = await (facts ? facts.server() : zooKeeperInfo(connection.connectionString));
      const queues = await Promise.all(
        [...open.keys()].sort().map(async (name) => ({ queue: name, ...(await facts?.queue(name)) })),
      );
      res.json({ namespace: prefix, server: server ?? null, queues });
    } catch (err) {
      next(err);
    }
  });
  router.use(wordingRouter(uiBasePath));
  router.use(serverAdapter.getRouter());
  router.use(errorReply);

  return {
    router,
    queues: () => [...open.keys()].sort(),
    refusal: () => refusal,
    async close() {
      clearInterval(timer);
      await looking;
      await Promise.allSettled([...[...open.values()].map(({ queue }) => queue.close()), ...closing]);
      open.clear();
      await space.close();
    },
  };
}

/** One line, JSON for the API and zookeeper.json, plain text for pages. */
function sendError(req: Request, res: Response, status: number, message: string): void {
  if (/^\/api\/|\.json$/.test(req.path)) res.status(status).json({ error: message });
  else res.status(status).type('text/plain').send(`${message}\n`);
}

/** A failure of the board's own routes: its first line, never a stack trace; 403 for a NoAuth. */
const errorReply: ErrorRequestHandler = (err, req, res, next) => {
  if (res.headersSent) return next(err);
  const message = String((err as Error)?.message ?? err).split('\n')[0] as string;
  if (err instanceof NoAuthError) sendError(req, res, 403, `not authorized: ${message}`);
  else sendError(req, res, 500, message);
};
